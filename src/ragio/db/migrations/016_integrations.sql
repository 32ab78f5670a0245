-- Data sources (ragcore.integrations): the owner's databases and business tools whose
-- records are synced per user. The credentials are one Fernet token of their JSON
-- (ADDON_ENCRYPTION_KEY, ragio.integrations.credentials); credential_fields names the
-- fields set, so a listing can say which are set without reading the token.
CREATE TABLE integrations (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                  text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    source_type           text NOT NULL,
    credentials           text NOT NULL,
    credential_fields     text[] NOT NULL DEFAULT '{}',
    user_field            text NOT NULL,
    sync_interval_minutes integer CHECK (sync_interval_minutes > 0),
    -- the last sync (ragcore.integrations.records): its run number claims the source,
    -- heartbeat moves with each page, so a sync cut off by a crash goes stale
    sync_status           text NOT NULL DEFAULT 'never'
        CHECK (sync_status IN ('never', 'syncing', 'succeeded', 'partial', 'failed')),
    sync_run              bigint NOT NULL DEFAULT 0,
    sync_started_at       timestamptz,
    sync_heartbeat_at     timestamptz,
    sync_finished_at      timestamptz,
    records_seen          bigint NOT NULL DEFAULT 0,
    records_stored        bigint NOT NULL DEFAULT 0,
    records_skipped       bigint NOT NULL DEFAULT 0,
    records_removed       bigint NOT NULL DEFAULT 0,
    sync_error            text NOT NULL DEFAULT '',
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- What the syncs stored: one row per record at the source, with the user it belongs to
-- and the run that last saw it (a complete sync removes the rows it did not see).
CREATE TABLE integration_records (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    integration_id bigint NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    user_key       text NOT NULL,
    source_key     text NOT NULL,
    record         jsonb NOT NULL,
    seen_run       bigint NOT NULL,
    synced_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (integration_id, source_key)
);
CREATE INDEX integration_records_by_user ON integration_records (integration_id, user_key, id);
