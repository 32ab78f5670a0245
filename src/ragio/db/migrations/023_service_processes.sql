-- The service processes on this database (`ragchat serve` replicas): each touches its row
-- while it runs (ragio.db.presence), so another process can tell a delivery whose answer
-- is still being written (its process is alive) from one a crash cut off (its process is
-- gone), and answer only the latter (ragio.channels.updates).
CREATE TABLE service_processes (
    name       text PRIMARY KEY,   -- host:pid:random, as in jobs.claimed_by
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL
);

-- The process that took a delivery (claimed, or resumed after its first process went).
ALTER TABLE channel_updates ADD COLUMN claimed_by text;
