-- Background jobs of every kind, in PostgreSQL so any process runs them: `ragchat serve`
-- (RUN_JOBS) or `ragchat worker` (ragio.jobs, rules in ragcore.jobs). A process claims
-- the oldest due job with FOR UPDATE SKIP LOCKED and touches its heartbeat while it runs;
-- a job whose process went quiet is queued again (resumed), a failure that may pass is
-- retried after a backoff (run_after), up to max_attempts. ``key`` names what a job works
-- on (an integration's id): one job per kind and key is unfinished at a time.
CREATE TABLE jobs (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text NOT NULL,
    key            text,
    status         text NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'running', 'done', 'failed')),
    payload        jsonb NOT NULL DEFAULT '{}',
    attempts       integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts   integer NOT NULL CHECK (max_attempts >= 1),
    run_after      timestamptz NOT NULL DEFAULT now(),
    progress_done  integer NOT NULL DEFAULT 0,
    progress_total integer NOT NULL DEFAULT 0,
    result         jsonb,
    problem        jsonb,   -- the last failure's problem+json (kept while retried)
    claimed_by     text,    -- the process running it: host, pid and a random part
    created_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    finished_at    timestamptz,
    heartbeat_at   timestamptz
);
CREATE INDEX jobs_due ON jobs (run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_running ON jobs (heartbeat_at) WHERE status = 'running';
CREATE INDEX jobs_by_kind ON jobs (kind, id);
CREATE UNIQUE INDEX jobs_one_unfinished_per_key ON jobs (kind, key)
    WHERE key IS NOT NULL AND status IN ('queued', 'running');

-- A large upload's file, kept until its ingestion job ends (any process may run it).
CREATE TABLE job_files (
    job_id bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    data   bytea NOT NULL
);

-- The document jobs of migration 019 become jobs of kind 'ingest', keeping their ids
-- (their URLs). Their files were under one process's DATA_DIR: an unfinished one is
-- failed, as its process would have done at its next start.
INSERT INTO jobs (id, kind, status, payload, attempts, max_attempts, progress_done,
                  progress_total, result, problem, created_at, started_at, finished_at,
                  heartbeat_at)
    OVERRIDING SYSTEM VALUE
    SELECT id, 'ingest',
           CASE WHEN status IN ('queued', 'running') THEN 'failed' ELSE status END,
           jsonb_build_object('name', name, 'format', format, 'charset', charset,
                              'size_bytes', size_bytes),
           1, 1, chunks_done, chunks_total, result,
           CASE WHEN status IN ('queued', 'running') THEN jsonb_build_object(
                    'type', 'about:blank', 'title', 'Service Unavailable', 'status', 503,
                    'detail', 'the service was upgraded while the job was unfinished; '
                              'upload the file again')
                ELSE problem END,
           created_at, started_at,
           CASE WHEN status IN ('queued', 'running') THEN now() ELSE finished_at END,
           heartbeat_at
    FROM document_jobs;
SELECT setval(pg_get_serial_sequence('jobs', 'id'),
              GREATEST((SELECT max(id) FROM jobs), 1),
              (SELECT max(id) FROM jobs) IS NOT NULL);
DROP TABLE document_jobs;
