-- Bilingual dictionaries into English (FreeDict's, as Debian ships them), for questions
-- asked in another language than the documents' (ragcore.chat.translation): loaded from
-- DICTIONARY_DIR by ragio.chat.dictionaries, one language at a time.
CREATE TABLE query_dictionaries (
    language    text PRIMARY KEY,          -- ISO 639-1
    fingerprint text NOT NULL,             -- the files' sizes and times, the reader's version
    words       integer NOT NULL,
    loaded_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE query_dictionary_words (
    language     text NOT NULL REFERENCES query_dictionaries (language) ON DELETE CASCADE,
    stem         text NOT NULL,            -- the headword's stem in its language
    headword     text NOT NULL,            -- lower-cased
    position     integer NOT NULL,         -- the entry's place in the dictionary
    translations text[] NOT NULL
);

CREATE INDEX query_dictionary_words_stem ON query_dictionary_words (language, stem);
CREATE INDEX query_dictionary_words_headword ON query_dictionary_words (language, headword);
