-- A name holds one current version of a document: a new upload of a name replaces the
-- documents holding it (ragcore.knowledge.documents.replacing), found by this index.
CREATE INDEX documents_by_name ON documents (name);

-- Uploads larger than INGEST_JOB_BYTES, ingested in the background: the file waits under
-- DATA_DIR/uploads/<id> until it is read; progress is chunks embedded of chunks_total;
-- ``result`` is the response a small upload gets (the document, duplicate, replaced),
-- ``problem`` the problem+json of a failure. A running job's process touches
-- ``heartbeat_at``; one without a sign of life for a while was left by a stopped process
-- and is marked failed (ragcore.knowledge.jobs, ragio.http.document_jobs).
CREATE TABLE document_jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    status       text NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'running', 'done', 'failed')),
    name         text NOT NULL,
    format       text NOT NULL,
    charset      text,
    size_bytes   bigint NOT NULL CHECK (size_bytes >= 0),
    chunks_total integer NOT NULL DEFAULT 0,
    chunks_done  integer NOT NULL DEFAULT 0,
    document_id  bigint REFERENCES documents (id) ON DELETE SET NULL,
    result       jsonb,
    problem      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz,
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX document_jobs_unfinished ON document_jobs (heartbeat_at)
    WHERE status IN ('queued', 'running');
