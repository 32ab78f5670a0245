-- The owner's answers (docs/answers.md, ragcore.answers): curated answers served before
-- any model is asked when a question matches one of theirs closely enough.
--
-- owner_answers: each answer as now in force (deleted_at set: withdrawn, kept for its
-- history), with the language it is written in (NULL: not known). owner_answer_questions: the questions it covers, each with its embedding in
-- the service's embedding space (NULL until embedded; cleared when the space changes,
-- and embedded again before the next match). owner_answer_versions: every version, as
-- written (created, edited, imported, deleted).
CREATE TABLE owner_answers (
    id          bigserial PRIMARY KEY,
    answer      text NOT NULL,
    language    text,
    version     integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    deleted_at  timestamptz
);

CREATE TABLE owner_answer_questions (
    id          bigserial PRIMARY KEY,
    answer_id   bigint NOT NULL REFERENCES owner_answers (id) ON DELETE CASCADE,
    question    text NOT NULL,
    normalized  text NOT NULL,
    embedding   vector
);
CREATE INDEX owner_answer_questions_answer ON owner_answer_questions (answer_id);
CREATE INDEX owner_answer_questions_normalized ON owner_answer_questions (normalized);

CREATE TABLE owner_answer_versions (
    answer_id   bigint NOT NULL REFERENCES owner_answers (id) ON DELETE CASCADE,
    version     integer NOT NULL,
    questions   text[] NOT NULL,
    answer      text NOT NULL,
    changed_at  timestamptz NOT NULL,
    change      text NOT NULL CHECK (change IN ('created', 'edited', 'imported', 'deleted')),
    PRIMARY KEY (answer_id, version)
);

-- The embeddings of questions customers asked, by the hash of their text, for grouping
-- them (GET /insights/gaps, /insights/top-questions): filled as questions are answered,
-- and for the rest when first grouped; emptied when the embedding space changes.
CREATE TABLE question_vectors (
    text_hash   text PRIMARY KEY,
    embedding   vector NOT NULL
);

-- What the insights read: turns by when they were asked; answers served from an
-- owner's answer are found by their citation.
CREATE INDEX conversation_turns_created ON conversation_turns (created_at);
CREATE INDEX conversation_turns_citations ON conversation_turns USING gin (citations jsonb_path_ops);
