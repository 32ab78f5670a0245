"""`ragchat reindex`: re-embed every chunk with the active embedder.

Vectors are computed batch by batch into a staging table, so memory stays
flat and the knowledge base stays whole while that runs; then one transaction
retypes the column, swaps the vectors in, rebuilds the index and records the
new embedding space. Interrupted, the old vectors are untouched.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragio.db.embedding_space import reshape
from ragio.db.migrations import advisory_lock
from ragio.db.pool import Database, in_thread
from ragio.db.vectors import vector_param
from ragio.providers import Embedder
from ragio.providers.chain import embed

BATCH = 128


def start_staging(conn: psycopg.Connection, dimensions: int) -> list[int]:
    """A fresh staging table; returns the ids of the chunks to re-embed."""
    conn.execute("DROP TABLE IF EXISTS reindex_staging")
    conn.execute(
        f"CREATE UNLOGGED TABLE reindex_staging "
        f"(chunk_id bigint PRIMARY KEY, embedding vector({int(dimensions)}) NOT NULL)"
    )
    return [row[0] for row in conn.execute("SELECT id FROM chunks ORDER BY id")]


def chunk_texts(conn: psycopg.Connection, ids: list[int]) -> list[tuple[int, str]]:
    return conn.execute(
        "SELECT id, text FROM chunks WHERE id = ANY(%s) ORDER BY id", (ids,)
    ).fetchall()


@in_thread
def stage(conn: psycopg.Connection, pairs: list[tuple[int, list[float]]]) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO reindex_staging (chunk_id, embedding) VALUES (%s, %s::vector)",
            [(chunk_id, vector_param(vector)) for chunk_id, vector in pairs],
        )


def swap_in(conn: psycopg.Connection, space: EmbeddingSpace) -> None:
    """Replace every chunk's vector with the staged one, in one transaction."""
    with advisory_lock(conn), conn.transaction():
        missing = conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN reindex_staging s ON s.chunk_id = c.id "
            "WHERE s.chunk_id IS NULL"
        ).fetchone()[0]
        if missing:
            raise RuntimeError(
                f"{missing} chunks were added while reindexing; run `ragchat reindex` again"
            )
        conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        conn.execute("ALTER TABLE chunks ALTER COLUMN embedding DROP NOT NULL")
        conn.execute("ALTER TABLE chunks ALTER COLUMN embedding TYPE vector USING NULL")
        conn.execute(
            "UPDATE chunks c SET embedding = s.embedding FROM reindex_staging s "
            "WHERE s.chunk_id = c.id"
        )
        conn.execute("ALTER TABLE chunks ALTER COLUMN embedding SET NOT NULL")
        reshape(conn, space)
        conn.execute("DROP TABLE reindex_staging")


async def reindex(
    database: Database, embedder: Embedder, progress: Callable[[int], None] = lambda n: None
) -> int:
    """Re-embed all chunks with ``embedder``; returns how many."""
    ids = await database.run(start_staging, embedder.space.dimensions)
    for start in range(0, len(ids), BATCH):
        rows = await database.run(chunk_texts, ids[start : start + BATCH])
        vectors = await embed(embedder, [text for _, text in rows], "document")
        await database.run(stage, [(cid, v) for (cid, _), v in zip(rows, vectors, strict=True)])
        progress(len(rows))
    await database.run(swap_in, embedder.space)
    return len(ids)
