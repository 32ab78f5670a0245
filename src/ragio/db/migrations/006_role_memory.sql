-- Role memory (rule 4): owner instructions, business profile entries and learned
-- patterns, per role. A duplicate is the same whole normalised text for the same role
-- (ragcore.employees.memory.content_hash: case folded, whitespace collapsed, stripped).
--
-- The embedding is in the active embedder's space (ragio/db/embedding_space.py). It is
-- NULL until the item is embedded (the built-in roles' starter seeds are stored when
-- the roles are seeded, without a vector) and is set back to NULL when the embedding
-- space changes: the text is kept, so it is embedded again when next searched. Each
-- role holds few items, so a search reads them all (no HNSW index is needed).
CREATE TABLE role_memory (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role         text NOT NULL REFERENCES roles (identifier) ON DELETE CASCADE,
    text         text NOT NULL CHECK (length(btrim(text)) > 0),
    tags         text[] NOT NULL DEFAULT '{}',
    source       text NOT NULL DEFAULT 'owner' CHECK (source IN ('owner', 'profile', 'learned')),
    importance   smallint NOT NULL DEFAULT 3 CHECK (importance BETWEEN 1 AND 5),
    created_at   timestamptz NOT NULL DEFAULT now(),
    content_hash text NOT NULL,
    embedding    vector,
    UNIQUE (role, content_hash)
);

CREATE INDEX role_memory_tags ON role_memory USING gin (tags);
