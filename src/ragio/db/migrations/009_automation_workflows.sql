-- Automation workflows (ragcore.workflows): webhooks called after the AI replies on a
-- wired text channel. The API checks every field (ragcore.workflows.definitions); the
-- constraints here only keep out what could never be valid.
CREATE TABLE automation_workflows (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (btrim(name) <> ''),
    webhook_url text NOT NULL CHECK (webhook_url ~* '^https?://'),
    channels    text[] NOT NULL DEFAULT '{}',
    is_active   boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
