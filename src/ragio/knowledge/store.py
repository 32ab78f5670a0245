"""SQL for documents and chunks. Every value is bound as a parameter, never formatted."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from ragcore.effects import StoreDocument
from ragcore.knowledge.documents import StoredDocument


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, bound as a parameter and cast in SQL."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def find_document(conn: psycopg.Connection, content_hash: str) -> StoredDocument | None:
    row = conn.execute(
        """SELECT d.id, d.name, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)
           FROM documents d WHERE d.content_hash = %s""",
        (content_hash,),
    ).fetchone()
    return (
        StoredDocument(id=row[0], name=row[1], chunk_count=row[2], created=False) if row else None
    )


def store_document(conn: psycopg.Connection, doc: StoreDocument) -> StoredDocument:
    """Insert the document and all its chunks in one transaction (all or nothing).

    When the same content was stored meanwhile, the existing document is returned.
    """
    if len(doc.chunks) != len(doc.vectors):
        raise ValueError(f"{len(doc.chunks)} chunks but {len(doc.vectors)} vectors")
    with conn.transaction():
        row = conn.execute(
            """INSERT INTO documents (name, content_hash, text) VALUES (%s, %s, %s)
               ON CONFLICT (content_hash) DO NOTHING RETURNING id""",
            (doc.name, doc.content_hash, doc.text),
        ).fetchone()
        if row is None:
            existing = find_document(conn, doc.content_hash)
            assert existing is not None
            return existing
        with conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO chunks (document_id, position, heading_path, text, embedding)
                   VALUES (%s, %s, %s, %s, %s::vector)""",
                [
                    (row[0], c.position, list(c.heading_path), c.text, vector_literal(v))
                    for c, v in zip(doc.chunks, doc.vectors, strict=True)
                ],
            )
    return StoredDocument(id=row[0], name=doc.name, chunk_count=len(doc.chunks), created=True)


def list_documents(conn: psycopg.Connection) -> list[dict]:
    rows = conn.execute(
        """SELECT d.id, d.name, d.created_at, count(c.id)
           FROM documents d LEFT JOIN chunks c ON c.document_id = d.id
           GROUP BY d.id ORDER BY d.id"""
    ).fetchall()
    return [
        {"id": r[0], "name": r[1], "created_at": r[2].isoformat(), "chunk_count": r[3]}
        for r in rows
    ]
