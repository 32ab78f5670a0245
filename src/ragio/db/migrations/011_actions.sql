-- Outbound actions under autonomy (ragcore.actions). The rules live in the core; the
-- constraints here only keep out what could never be valid.

-- The autonomy setting (GET/POST /autonomy): one row, absent until first set (then
-- everything is off and no owner is set).
CREATE TABLE autonomy_settings (
    only_row         boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    mode             text NOT NULL DEFAULT 'off' CHECK (mode IN ('off', 'semi', 'full')),
    approval_channel text CHECK (approval_channel IN ('telegram', 'whatsapp', 'discord')),
    approval_target  text,
    allowed_kinds    text[] NOT NULL DEFAULT '{webhook,email,chatops}',
    sensitive_roles  text NOT NULL DEFAULT 'semi' CHECK (sensitive_roles IN ('semi', 'off')),
    updated_at       timestamptz,
    CHECK ((approval_channel IS NULL) = (approval_target IS NULL))
);

-- Every action submitted, whatever became of it. id is the approval id (10 characters
-- of Crockford's base32); action is the checked action as JSON (kinds.action_json).
CREATE TABLE actions (
    id          text PRIMARY KEY CHECK (id ~ '^[0-9A-HJKMNP-TV-Z]{10}$'),
    kind        text NOT NULL CHECK (kind IN ('webhook', 'email', 'chatops')),
    action      jsonb NOT NULL,
    role        text,
    origin      text NOT NULL,
    status      text NOT NULL CHECK (status IN (
                    'refused', 'pending', 'executing', 'executed', 'failed', 'rejected',
                    'expired')),
    reason      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    decided_at  timestamptz,
    decided_by  text,
    finished_at timestamptz
);
CREATE INDEX actions_pending ON actions (expires_at) WHERE status = 'pending';

-- Every decision and result (GET /autonomy/log), oldest first by id.
CREATE TABLE action_log (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action_id text NOT NULL REFERENCES actions (id) ON DELETE CASCADE,
    at        timestamptz NOT NULL DEFAULT now(),
    event     text NOT NULL,
    detail    text NOT NULL DEFAULT ''
);
CREATE INDEX action_log_action ON action_log (action_id, id);
