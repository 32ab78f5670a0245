"""Searching the chunks: SQL for retrieval. Every value is bound as a parameter."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from ragcore.chat.sources import Hit
from ragcore.knowledge.embedding_space import index_kind
from ragio.knowledge.store import vector_literal


def search_chunks(
    conn: psycopg.Connection, vector: Sequence[float], limit: int, dimensions: int
) -> list[Hit]:
    """The ``limit`` chunks nearest to ``vector`` by cosine distance, through the HNSW index."""
    dims = int(dimensions)
    if index_kind(dims) == "vector":
        distance = "c.embedding <=> %(v)s::vector"
    else:  # the index is on the half-precision cast: order by the same expression
        distance = f"c.embedding::halfvec({dims}) <=> %(v)s::halfvec({dims})"
    rows = conn.execute(
        f"""SELECT c.id, c.document_id, d.name, c.text, 1 - ({distance}) AS score, c.heading_path
            FROM chunks c JOIN documents d ON d.id = c.document_id
            ORDER BY {distance}
            LIMIT %(limit)s""",
        {"v": vector_literal(vector), "limit": limit},
    ).fetchall()
    return [
        Hit(
            chunk_id=r[0],
            document_id=r[1],
            document_name=r[2],
            text=r[3],
            score=float(r[4]),
            heading_path=tuple(r[5]),
        )
        for r in rows
    ]
