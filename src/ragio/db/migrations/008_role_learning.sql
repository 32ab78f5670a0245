-- Learning from past interactions (ragcore.employees.learning): answered questions per
-- role, kept for the learning window, and which of them a learned pattern came from.
--
-- asker_hash is a SHA-256 of the asker's identifier: learning counts people without
-- keeping who they are. The embedding is the question's vector in the active
-- embedder's space; it is set to NULL when the space changes, and such rows no longer
-- count as similar to anything. learned_memory marks the question a pattern came from
-- (the other questions that taught it are deleted when it is learned): deleting the
-- learned memory deletes that row, so the pattern is learned again only if enough
-- people ask again.
CREATE TABLE role_interactions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role           text NOT NULL REFERENCES roles (identifier) ON DELETE CASCADE,
    asker_hash     text NOT NULL,
    question       text NOT NULL,
    documents      text[] NOT NULL DEFAULT '{}',
    embedding      vector,
    at             timestamptz NOT NULL,
    learned_memory bigint REFERENCES role_memory (id) ON DELETE CASCADE
);

CREATE INDEX role_interactions_recent ON role_interactions (role, at);
CREATE INDEX role_interactions_asker ON role_interactions (role, asker_hash, at);
CREATE INDEX role_interactions_learned ON role_interactions (role)
    WHERE learned_memory IS NOT NULL;
