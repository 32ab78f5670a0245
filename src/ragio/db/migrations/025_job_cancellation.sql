-- A job may be cancelled (DELETE /jobs/{id}; the rule is ragcore.jobs.on_cancel): a
-- queued one becomes 'cancelled' at once; a running one gets ``cancel_requested_at``,
-- which the process running it (any replica) reads at its next stop point, between two
-- batches, and then ends it 'cancelled' with what it had done as its result.
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled'));
ALTER TABLE jobs ADD COLUMN cancel_requested_at timestamptz;
