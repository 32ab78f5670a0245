-- API keys beside SERVICE_API_KEY (ragcore.api.keys, ragio.keys): each with a name, its
-- scopes, optional limits and expiry. The key itself is never kept: only its SHA-256
-- (hash) and its first characters (shown), to tell keys apart. A revoked key stays, with
-- revoked_at, so its usage keeps its name. Every request with such a key reads its row,
-- so a revocation holds at once in every replica.
CREATE TABLE api_keys (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                text NOT NULL,
    shown               text NOT NULL,
    hash                text NOT NULL UNIQUE,
    scopes              text[] NOT NULL CHECK (cardinality(scopes) >= 1),
    requests_per_minute integer NOT NULL DEFAULT 0 CHECK (requests_per_minute >= 0),
    tokens_per_day      bigint NOT NULL DEFAULT 0 CHECK (tokens_per_day >= 0),
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz,
    revoked_at          timestamptz,
    last_used_at        timestamptz
);
-- a name names one key in use; a revoked key's name may be given again
CREATE UNIQUE INDEX api_keys_name ON api_keys (name) WHERE revoked_at IS NULL;

-- Requests counted per key and calendar minute, for requests_per_minute: one row a key
-- and minute, raised by a conditional upsert, so replicas share one count.
CREATE TABLE api_key_minutes (
    key_id   bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    minute   timestamptz NOT NULL,
    requests integer NOT NULL,
    PRIMARY KEY (key_id, minute)
);

-- The model tokens each key's questions used (tokens_per_day, usage by key), and the
-- conversations each key asked (a chat key reads only those).
ALTER TABLE usage_records ADD COLUMN api_key_id bigint REFERENCES api_keys (id);
CREATE INDEX usage_records_key_at ON usage_records (api_key_id, at) WHERE api_key_id IS NOT NULL;
ALTER TABLE conversations ADD COLUMN api_key_id bigint REFERENCES api_keys (id);
CREATE INDEX conversations_api_key ON conversations (api_key_id, updated_at DESC)
    WHERE api_key_id IS NOT NULL;
