-- The chat widget on the owner's website (docs/widget.md, ragcore.widget).
-- A site: one website the widget may run on. public_id is what the page names (not a
-- secret); identity_secret verifies a logged-in customer's id (shown to the owner once);
-- a visitor token of an earlier sessions_generation is refused (revoked).
CREATE TABLE widget_sites (
    id                        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id                 text NOT NULL UNIQUE,
    name                      text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    allowed_origins           text[] NOT NULL DEFAULT '{}',
    role                      text,
    greeting                  text NOT NULL DEFAULT '',
    colour                    text NOT NULL DEFAULT '#2563eb',
    position                  text NOT NULL DEFAULT 'right' CHECK (position IN ('right', 'left')),
    visitor_questions_per_day integer NOT NULL DEFAULT 50 CHECK (visitor_questions_per_day > 0),
    ip_questions_per_hour     integer NOT NULL DEFAULT 60 CHECK (ip_questions_per_hour > 0),
    ip_questions_per_day      integer NOT NULL DEFAULT 300 CHECK (ip_questions_per_day > 0),
    tokens_per_day            bigint NOT NULL DEFAULT 1000000 CHECK (tokens_per_day >= 0),
    enabled                   boolean NOT NULL DEFAULT true,
    identity_secret           text NOT NULL,
    sessions_generation       integer NOT NULL DEFAULT 0,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now()
);

-- The key the service signs visitor tokens with: one, made by the first process that
-- needs it (ragio.widget.store.token_key), the same for every replica.
CREATE TABLE widget_keys (
    id     integer PRIMARY KEY CHECK (id = 1),
    secret bytea NOT NULL
);

-- The quotas' counters (ragcore.widget.quotas): one row per site, subject and window.
-- Rows of windows that ended are deleted as new ones begin.
CREATE TABLE widget_counters (
    site_id      bigint NOT NULL REFERENCES widget_sites (id) ON DELETE CASCADE,
    subject      text NOT NULL,
    window_kind  text NOT NULL CHECK (window_kind IN ('hour', 'day')),
    window_start timestamptz NOT NULL,
    count        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, subject, window_kind, window_start)
);
CREATE INDEX widget_counters_by_window ON widget_counters (window_start);
