-- Full-text search on chunks, for the lexical half of hybrid search (BM25, fused
-- with the vector ranking by reciprocal rank fusion; see ragio/knowledge/search.py).
--
-- The text search configuration is 'english' (measured against 'simple' with
-- scripts/eval_retrieval.py): English stop words are not indexed, so a match is on
-- a content word, and English words match across inflections. Text in other
-- languages is split and lower-cased the same way on both sides, so its words still
-- match exactly. ragio/knowledge/search.py names the same configuration.

-- Number of words in a tsvector (its positions), for BM25's length normalisation.
CREATE FUNCTION fulltext_word_count(v tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer
          FROM unnest(v) $$;

ALTER TABLE chunks
    ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    ADD COLUMN search_length integer
        GENERATED ALWAYS AS (fulltext_word_count(to_tsvector('english'::regconfig, text))) STORED;

-- Keep the tsvector in the row (compressed if need be): the full-text side reads it for
-- every candidate chunk, and out of line that cost two more page reads each (measured
-- at 100,000 chunks). The vector (read through its own index) and the text (read for
-- the few hits returned) move out of line first.
ALTER TABLE chunks ALTER COLUMN search_vector SET STORAGE MAIN;

CREATE INDEX chunks_search_vector_gin ON chunks USING gin (search_vector);

-- BM25 needs how many chunks hold each term, how many chunks there are and their
-- average length: kept exact by the triggers below, in the same transactions.
CREATE TABLE fulltext_terms (
    lexeme text PRIMARY KEY,
    chunks integer NOT NULL
);

CREATE TABLE fulltext_totals (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    chunks   bigint NOT NULL,
    words    bigint NOT NULL
);

INSERT INTO fulltext_totals (chunks, words)
    SELECT count(*), coalesce(sum(search_length), 0) FROM chunks;
INSERT INTO fulltext_terms (lexeme, chunks)
    SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM chunks');

CREATE FUNCTION fulltext_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    terms      text[];
    counts     integer[];
    chunk_delta bigint;
    word_delta bigint;
BEGIN
    -- Writers of chunks take turns on the statistics (until they commit), so two
    -- documents stored at once cannot deadlock on the rows of their common terms.
    PERFORM pg_advisory_xact_lock(hashtextextended('ragchat fulltext statistics', 0));
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(lexeme ORDER BY lexeme), array_agg(n ORDER BY lexeme)
          INTO terms, counts
          FROM (SELECT u AS lexeme, count(*)::integer AS n
                  FROM added, unnest(tsvector_to_array(added.search_vector)) AS u
                 GROUP BY u) AS x;
        SELECT count(*), coalesce(sum(search_length), 0) INTO chunk_delta, word_delta FROM added;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(lexeme ORDER BY lexeme), array_agg(-n ORDER BY lexeme)
          INTO terms, counts
          FROM (SELECT u AS lexeme, count(*)::integer AS n
                  FROM removed, unnest(tsvector_to_array(removed.search_vector)) AS u
                 GROUP BY u) AS x;
        SELECT -count(*), -coalesce(sum(search_length), 0)
          INTO chunk_delta, word_delta FROM removed;
    ELSE  -- UPDATE: only rows whose text changed count
        WITH changed AS (
            SELECT o.search_vector AS old_vector, n.search_vector AS new_vector,
                   n.search_length - o.search_length AS length_delta
              FROM removed o JOIN added n ON n.id = o.id
             WHERE o.search_vector IS DISTINCT FROM n.search_vector
        ), deltas AS (
            SELECT lexeme, sum(d)::integer AS n FROM (
                SELECT u AS lexeme, -1 AS d
                  FROM changed, unnest(tsvector_to_array(changed.old_vector)) AS u
                UNION ALL
                SELECT u, 1 FROM changed, unnest(tsvector_to_array(changed.new_vector)) AS u
            ) AS x GROUP BY lexeme HAVING sum(d) <> 0
        )
        SELECT array_agg(lexeme ORDER BY lexeme), array_agg(n ORDER BY lexeme),
               0, (SELECT coalesce(sum(length_delta), 0) FROM changed)
          INTO terms, counts, chunk_delta, word_delta
          FROM deltas;
    END IF;
    IF terms IS NOT NULL THEN
        INSERT INTO fulltext_terms AS t (lexeme, chunks)
            SELECT lexeme, n FROM unnest(terms, counts) AS x (lexeme, n) ORDER BY lexeme
            ON CONFLICT (lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
        DELETE FROM fulltext_terms WHERE lexeme = ANY (terms) AND chunks <= 0;
    END IF;
    IF chunk_delta <> 0 OR word_delta <> 0 THEN
        UPDATE fulltext_totals
           SET chunks = chunks + chunk_delta, words = words + word_delta;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_fulltext_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION fulltext_track();
CREATE TRIGGER chunks_fulltext_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION fulltext_track();
CREATE TRIGGER chunks_fulltext_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION fulltext_track();
