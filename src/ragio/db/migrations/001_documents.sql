-- Documents and their chunks. The embedding column gets its dimension at
-- start-up from the active embedder (see ragio/db/embedding_space.py).
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE documents (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL,
    content_hash text NOT NULL UNIQUE,
    text         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE chunks (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id  bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    position     integer NOT NULL,
    heading_path text[] NOT NULL DEFAULT '{}',
    text         text NOT NULL,
    embedding    vector NOT NULL,
    UNIQUE (document_id, position)
);

-- Which embedder filled the embedding column: one row.
CREATE TABLE embedding_space (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    provider   text NOT NULL,
    model      text NOT NULL,
    dimensions integer NOT NULL
);
