"""Searching the chunks: hybrid retrieval in one SQL statement. Values are bound as parameters.

Two ranked lists, and the knowledge graph's when it gives one, fused by reciprocal rank
fusion (``ragcore.knowledge.retrieval``):

- dense: cosine distance to the question's vector, through the HNSW index (on the
  column up to 2,000 dimensions, on its ``halfvec`` cast above). With a document
  filter, pgvector's iterative index scan keeps scanning until enough rows pass it.
- full text: BM25 over the ``english`` tsvector column of migration 004. The
  question's terms are OR-ed (PostgreSQL's ``plainto_tsquery`` would AND them, and
  ``ts_rank`` knows no inverse document frequency: both measured far worse, see
  ``scripts/eval_retrieval.py``); each term's weight is its inverse document
  frequency from ``fulltext_terms``, kept by triggers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import psycopg

from ragcore.knowledge.effects import SearchChunks
from ragcore.knowledge.embedding_space import EmbeddingSpace, index_kind
from ragcore.knowledge.retrieval import (
    BM25_B,
    BM25_K1,
    LEXICAL_BUDGET,
    MODES,
    RRF_K,
    RetrievedHit,
    candidate_depth,
    ef_search,
    similarity_floor,
    topic_floor,
    topic_floor_languages,
)
from ragio.db.vectors import vector_param

#: must be the configuration of chunks.search_vector (migration 004)
TEXT_SEARCH_CONFIG = "english"

# The question's terms, normalised as the column is; and the BM25 corpus statistics.
_TERMS = """
query AS MATERIALIZED (
    SELECT tsvector_to_array(to_tsvector(%(config)s::regconfig, %(text)s)) AS lexemes
),
totals AS MATERIALIZED (
    SELECT greatest(chunks, 1)::float8 AS n,
           greatest(words, 1)::float8 / greatest(chunks, 1) AS avgdl
    FROM fulltext_totals
),
terms AS MATERIALIZED (
    SELECT t.lexeme,
           ln(1 + (totals.n - t.chunks + 0.5) / (t.chunks + 0.5)) AS idf,
           sum(t.chunks) OVER (ORDER BY t.chunks, t.lexeme) AS reach
    FROM fulltext_terms t, totals, query
    WHERE t.lexeme = ANY (query.lexemes)
),
probe AS MATERIALIZED (
    -- the rarest terms while the chunks holding them fit the budget (the rarest always)
    SELECT array_to_string(
               array_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || ''''),
               ' | ')::tsquery AS tsq
    FROM terms
    WHERE reach <= %(budget)s::bigint OR reach = (SELECT min(reach) FROM terms)
),"""

_LEXICAL_BM25 = """
matched AS MATERIALIZED (
    SELECT c.id, c.search_vector, c.search_length
    FROM chunks c, probe
    WHERE c.search_vector @@ probe.tsq {filter}
),
lexical AS MATERIALIZED (
    SELECT m.id,
           sum(terms.idf * cardinality(u.positions) * (%(k1)s + 1)
               / (cardinality(u.positions)
                  + %(k1)s * (1 - %(b)s + %(b)s * m.search_length / totals.avgdl))) AS score
    FROM matched m
    CROSS JOIN totals
    CROSS JOIN query
    CROSS JOIN LATERAL unnest(ts_filter(setweight(m.search_vector, 'A', query.lexemes), '{{a}}')) u
    JOIN terms ON terms.lexeme = u.lexeme
    GROUP BY m.id
    ORDER BY score DESC, m.id
    LIMIT %(depth)s
),"""

# PostgreSQL's own ranking (no inverse document frequency), kept for the measurement only:
# eval_retrieval.py --lexical ts_rank
_LEXICAL_TS_RANK = """
lexical AS MATERIALIZED (
    SELECT c.id, ts_rank(c.search_vector, probe.tsq, 1) AS score
    FROM chunks c, probe
    WHERE c.search_vector @@ probe.tsq {filter}
    ORDER BY score DESC, c.id
    LIMIT %(depth)s
),"""

_NO_LEXICAL = """
lexical AS (SELECT NULL::bigint AS id, NULL::float8 AS score WHERE false),"""

_DENSE = """
dense AS MATERIALIZED (
    SELECT c.id, {distance} AS distance
    FROM chunks c
    WHERE true {filter}
    ORDER BY {distance}
    LIMIT %(depth)s
),"""

_NO_DENSE = """
dense AS (SELECT NULL::bigint AS id, NULL::float8 AS distance WHERE false),"""

_RANKED = """
lexical_ranked AS (
    SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank FROM lexical
),
dense_ranked AS (
    -- relaxed_order lets the iterative scan return rows slightly out of order: re-rank
    SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS rank FROM dense
),"""

_FUSE_TWO = """
fused AS (
    SELECT coalesce(d.id, l.id) AS id, d.rank AS vector_rank, l.rank AS lexical_rank,
           NULL::bigint AS graph_rank, d.distance,
           coalesce(1.0 / (%(rrf_k)s + d.rank), 0)
             + coalesce(1.0 / (%(rrf_k)s + l.rank), 0) AS score
    FROM dense_ranked d FULL JOIN lexical_ranked l ON l.id = d.id
    ORDER BY score DESC, vector_rank NULLS LAST, id
    LIMIT %(limit)s
)"""

# The knowledge graph's list comes ranked (ragcore.knowledge.graph.rank_graph_chunks);
# it weighs graph_weight where the other two weigh 1.
_FUSE_THREE = """
graph_ranked AS (
    SELECT g.id, g.rank
    FROM unnest(%(graph)s::bigint[]) WITH ORDINALITY AS g(id, rank)
    {graph_filter}
),
fused AS (
    SELECT id, min(vector_rank) AS vector_rank, min(lexical_rank) AS lexical_rank,
           min(graph_rank) AS graph_rank, min(distance) AS distance, sum(score) AS score
    FROM (
        SELECT id, rank AS vector_rank, NULL::bigint AS lexical_rank,
               NULL::bigint AS graph_rank, distance, 1.0 / (%(rrf_k)s + rank) AS score
        FROM dense_ranked
        UNION ALL
        SELECT id, NULL, rank, NULL, NULL, 1.0 / (%(rrf_k)s + rank) FROM lexical_ranked
        UNION ALL
        SELECT id, NULL, NULL, rank, NULL, %(graph_weight)s / (%(rrf_k)s + rank)
        FROM graph_ranked
    ) lists
    GROUP BY id
    ORDER BY score DESC, vector_rank NULLS LAST, id
    LIMIT %(limit)s
)"""

_SELECT = """
SELECT c.id, c.document_id, doc.name, c.text, f.score, c.heading_path,
       f.vector_rank, f.lexical_rank,
       -- the vector is read only for the few hits the dense list did not find
       1 - coalesce(f.distance, {distance}) AS similarity, f.graph_rank, doc.source_url
FROM fused f
JOIN chunks c ON c.id = f.id
JOIN documents doc ON doc.id = c.document_id
ORDER BY f.score DESC, f.vector_rank NULLS LAST, c.id"""


def _distance(dimensions: int) -> str:
    dims = int(dimensions)  # formatted into SQL: an int is safe
    if index_kind(dims) == "vector":
        return "c.embedding <=> %(v)s::vector"
    # the index is on the half-precision cast: order by the same expression
    return f"c.embedding::halfvec({dims}) <=> %(v)s::vector::halfvec({dims})"


def _statement(
    mode: str, lexical: str, dimensions: int, filtered: bool, graph: bool = False
) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}; choose {', '.join(MODES)}")
    if lexical not in ("bm25", "ts_rank"):
        raise ValueError(f"unknown lexical ranking {lexical!r}")
    distance = _distance(dimensions)
    filter_sql = "AND c.document_id = ANY (%(documents)s::bigint[])" if filtered else ""
    parts = ["WITH", _TERMS]
    if mode == "dense":
        parts.append(_NO_LEXICAL)
    elif lexical == "bm25":
        parts.append(_LEXICAL_BM25.format(filter=filter_sql))
    else:
        parts.append(_LEXICAL_TS_RANK.format(filter=filter_sql))
    if mode == "fulltext":
        parts.append(_NO_DENSE)
    else:
        parts.append(_DENSE.format(distance=distance, filter=filter_sql))
    parts.append(_RANKED)
    if graph:
        graph_filter = (
            "JOIN chunks c ON c.id = g.id WHERE c.document_id = ANY (%(documents)s::bigint[])"
            if filtered
            else ""
        )
        parts.append(_FUSE_THREE.format(graph_filter=graph_filter))
    else:
        parts.append(_FUSE_TWO)
    parts.append(_SELECT.format(distance=distance))
    return "\n".join(parts)


# the planner's count of the chunks (ANALYZE, autovacuum); -1 before the first: none
_CHUNKS_ESTIMATE = "SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'chunks'::regclass"


#: how long the planner's estimate of the chunks is reused before it is read again: it
#: moves by ANALYZE, and the rule it feeds changes its answer at 100,000 chunks
ESTIMATE_SECONDS = 30.0
#: by database (host, port, name): the chunks, and when it was read
_estimates: dict[tuple[str, int, str], tuple[float, float]] = {}


def _chunks_estimate(conn: psycopg.Connection) -> float:
    """The planner's estimate of the chunks, read at most every ESTIMATE_SECONDS: one
    statement fewer for nearly every question."""
    info = conn.info
    database = (info.host, info.port, info.dbname)
    chunks, read_at = _estimates.get(database, (0.0, -math.inf))
    now = time.monotonic()
    if now - read_at > ESTIMATE_SECONDS:
        row = conn.execute(_CHUNKS_ESTIMATE).fetchone()
        chunks = float(row[0]) if row else 0.0
        _estimates[database] = (chunks, now)
    return chunks


def _run(
    conn: psycopg.Connection,
    statement: str,
    vector: Sequence[float],
    text: str,
    limit: int,
    document_ids: Sequence[int] | None,
    text_config: str,
    lexical_budget: int,
    graph_chunk_ids: Sequence[int] = (),
    graph_weight: float = 0.0,
    hnsw_ef_search: int | None = None,
) -> list[tuple]:
    depth = candidate_depth(limit)
    params = {
        "v": vector_param(vector),
        "text": text,
        "config": text_config,
        "budget": int(lexical_budget),
        "k1": BM25_K1,
        "b": BM25_B,
        "depth": depth,
        "rrf_k": RRF_K,
        "limit": int(limit),
        "documents": list(document_ids) if document_ids is not None else None,
        "graph": list(graph_chunk_ids),
        "graph_weight": float(graph_weight),
    }
    generic = document_ids is None
    if generic:  # the depths are the statement's own: its one plan is made for them
        statement = statement.replace("%(depth)s", str(int(depth)))
        statement = statement.replace("%(limit)s", str(int(limit)))
    with conn.transaction():
        # As deep as the list asked for (HNSW returns at most ef_search rows), deeper on a
        # larger graph (the planner's estimate of the chunks); and with a filter, keep
        # scanning the graph until that many rows pass it.
        # No JIT: compiling would cost more than this statement takes to run.
        # Unfiltered, one plan a connection: psycopg prepares a statement run 5 times,
        # and PostgreSQL would still plan it anew each time (custom plans), ~1.1 ms of
        # the database's CPU a question, more than running it (a filter's plan is
        # left to its values: which documents, how many).
        if hnsw_ef_search is None:
            hnsw_ef_search = ef_search(depth, _chunks_estimate(conn))
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            " set_config('jit', 'off', true),"
            " set_config('plan_cache_mode', %s, true)",
            (str(hnsw_ef_search), "force_generic_plan" if generic else "auto"),
        )
        return conn.execute(statement, params).fetchall()


def rank_chunks(
    conn: psycopg.Connection,
    vector: Sequence[float],
    text: str,
    limit: int,
    space: EmbeddingSpace,
    document_ids: Sequence[int] | None = None,
    mode: str = "hybrid",
    lexical: str = "bm25",
    text_config: str = TEXT_SEARCH_CONFIG,
    lexical_budget: int = LEXICAL_BUDGET,
    graph_chunk_ids: Sequence[int] = (),
    graph_weight: float = 0.0,
    hnsw_ef_search: int | None = None,
) -> list[RetrievedHit]:
    """The ``limit`` best chunks for the question (``vector``, ``text``), best first,
    each with the evidence that found it; only chunks of ``document_ids`` when given.
    ``graph_chunk_ids``: the knowledge graph's ranked list, fused with ``graph_weight``
    (left out when empty or weightless).

    ``mode`` (hybrid, dense, fulltext), ``lexical`` (bm25, ts_rank), ``text_config``,
    ``lexical_budget`` and ``hnsw_ef_search`` (default: ``retrieval.ef_search``'s rule)
    are for measurements; the service uses the defaults.
    """
    graph = bool(graph_chunk_ids) and graph_weight > 0
    statement = _statement(mode, lexical, space.dimensions, document_ids is not None, graph)
    if limit <= 0 or (document_ids is not None and not document_ids):
        return []
    rows = _run(
        conn,
        statement,
        vector,
        text,
        limit,
        document_ids,
        text_config,
        lexical_budget,
        graph_chunk_ids if graph else (),
        graph_weight,
        hnsw_ef_search,
    )
    floor, on_topic = similarity_floor(space), topic_floor(space)
    on_topic_languages = topic_floor_languages(space)
    return [
        RetrievedHit(
            chunk_id=r[0],
            document_id=r[1],
            document_name=r[2],
            text=r[3],
            score=float(r[4]),
            heading_path=tuple(r[5]),
            vector_rank=r[6],
            lexical_rank=r[7],
            similarity=float(r[8]),
            graph_rank=r[9],
            source_url=r[10],
            similarity_floor=floor,
            topic_floor=on_topic,
            topic_floor_languages=on_topic_languages,
        )
        for r in rows
    ]


def explain(
    conn: psycopg.Connection,
    vector: Sequence[float],
    text: str,
    limit: int,
    dimensions: int,
    document_ids: Sequence[int] | None = None,
) -> str:
    """PostgreSQL's plan (EXPLAIN ANALYZE) of the service's hybrid search, for operators."""
    statement = "EXPLAIN (ANALYZE, BUFFERS) " + _statement(
        "hybrid", "bm25", dimensions, document_ids is not None
    )
    rows = _run(
        conn, statement, vector, text, limit, document_ids, TEXT_SEARCH_CONFIG, LEXICAL_BUDGET
    )
    return "\n".join(r[0] for r in rows)


def search(
    conn: psycopg.Connection, request: SearchChunks, space: EmbeddingSpace
) -> list[RetrievedHit]:
    """Execute a ``SearchChunks`` effect: hybrid search with the active embedder's ``space``."""
    return rank_chunks(
        conn,
        request.vector,
        request.text,
        request.limit,
        space,
        request.document_ids,
        graph_chunk_ids=request.graph_chunk_ids,
        graph_weight=request.graph_weight,
    )


# A name is mentioned when a chunk holds it as a phrase, by the full-text column's own
# configuration ("try_files" is "try" then "files", not both anywhere; found through the
# column's GIN index), or when a document's name holds it.
_MENTIONED = """
SELECT n.name
FROM unnest(%(names)s::text[]) AS n(name)
CROSS JOIN LATERAL (SELECT phraseto_tsquery(%(config)s::regconfig, n.name) AS phrase) q
WHERE (numnode(q.phrase) > 0 AND EXISTS (SELECT 1 FROM chunks c WHERE c.search_vector @@ q.phrase))
   OR EXISTS (SELECT 1 FROM documents d WHERE strpos(lower(d.name), n.name) > 0)
"""


def mentioned(conn: psycopg.Connection, names: Sequence[str]) -> frozenset[str]:
    """Execute a ``FindMentions`` effect: the ``names`` the stored documents mention."""
    rows = conn.execute(_MENTIONED, {"names": list(names), "config": TEXT_SEARCH_CONFIG}).fetchall()
    return frozenset(row[0] for row in rows)
