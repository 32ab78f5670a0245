-- Live-data actions (ragcore.live, SPEC rule 9): an owner's query template on one data
-- source, run while the customer waits. The template is kept as the owner wrote it (SQL
-- or a path as a JSON string, a filter or a search as an object) and checked again on
-- every load (ragcore.live.templates.check_template), so a rule change cannot leave an
-- unchecked template running.
CREATE TABLE live_actions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    source_id   bigint NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    template    jsonb NOT NULL,
    triggers    text[] NOT NULL DEFAULT '{}',
    auto_match  boolean NOT NULL DEFAULT true,
    channels    text[] NOT NULL DEFAULT '{}',
    description text NOT NULL DEFAULT '',
    enabled     boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Every execution, for the owner: the values are an HMAC of the bound values (never the
-- values: an order number or an e-mail address is the customer's), the outcome one of
-- ran, cached, failed, asked (a value was missing: nothing ran) or dry_run.
CREATE TABLE live_action_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action_id   bigint REFERENCES live_actions (id) ON DELETE SET NULL,
    action_name text NOT NULL,
    channel     text NOT NULL,
    values_hash text NOT NULL,
    row_count   integer,
    affected    integer,
    duration_ms integer NOT NULL DEFAULT 0,
    outcome     text NOT NULL CHECK (outcome IN ('ran', 'cached', 'failed', 'asked', 'dry_run')),
    reason      text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX live_action_runs_by_action ON live_action_runs (action_id, id);
CREATE INDEX live_action_runs_by_time ON live_action_runs (at);

-- A question asked for a missing value, kept for the asker's next message only
-- (ragcore.live.matching.Pending): one per channel and asker (a SHA-256 hash of who
-- asked), it expires; ``known``: the values the customer gave before it, for 30 minutes.
CREATE TABLE live_pending (
    channel     text NOT NULL,
    asker       text NOT NULL,
    action_id   bigint NOT NULL REFERENCES live_actions (id) ON DELETE CASCADE,
    missing     text[] NOT NULL,
    known       jsonb NOT NULL DEFAULT '{}',
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (channel, asker)
);
