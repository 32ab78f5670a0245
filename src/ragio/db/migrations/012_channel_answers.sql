-- A delivery keeps its message until it is answered, so one whose answer was cut off
-- (a restart or a crash after the webhook was acknowledged: the platform will not
-- deliver it again) is answered when the service starts again (ragio.channels.updates).
-- message is cleared once answered, or once given up, so a platform credential in it
-- (a Discord interaction token) is not kept. resumed_at makes a resumed delivery
-- resumed once only, by one process.
ALTER TABLE channel_updates
    ADD COLUMN message     jsonb,
    ADD COLUMN answered_at timestamptz,
    ADD COLUMN resumed_at  timestamptz;

UPDATE channel_updates SET answered_at = received_at;  -- taken before this: answered

CREATE INDEX channel_updates_unanswered ON channel_updates (received_at)
    WHERE answered_at IS NULL;
