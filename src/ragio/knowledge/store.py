"""SQL for documents and chunks. Every value is bound as a parameter, never formatted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ragcore.effects import StoreDocument
from ragcore.knowledge.documents import StoredDocument

# The columns a StoredDocument is read from, for a documents row ``d``.
_DOCUMENT = """d.id, d.name, d.content_type, d.size_bytes, d.created_at,
               (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"""


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, bound as a parameter and cast in SQL."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _stored(row: Sequence[Any], created: bool = False) -> StoredDocument:
    return StoredDocument(
        id=row[0],
        name=row[1],
        content_type=row[2],
        size_bytes=row[3],
        created_at=row[4],
        chunk_count=row[5],
        created=created,
    )


def find_document(conn: psycopg.Connection, content_hash: str) -> StoredDocument | None:
    row = conn.execute(
        f"SELECT {_DOCUMENT} FROM documents d WHERE d.content_hash = %s", (content_hash,)
    ).fetchone()
    return _stored(row) if row else None


def store_document(conn: psycopg.Connection, doc: StoreDocument) -> StoredDocument:
    """Insert the document and all its chunks in one transaction (all or nothing).

    When the same content was stored meanwhile, the existing document is returned.
    """
    if len(doc.chunks) != len(doc.vectors):
        raise ValueError(f"{len(doc.chunks)} chunks but {len(doc.vectors)} vectors")
    with conn.transaction():
        row = conn.execute(
            """INSERT INTO documents (name, content_hash, text, content_type, size_bytes)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (content_hash) DO NOTHING RETURNING id, created_at""",
            (doc.name, doc.content_hash, doc.text, doc.content_type, doc.size_bytes),
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
    return StoredDocument(
        id=row[0],
        name=doc.name,
        chunk_count=len(doc.chunks),
        created=True,
        content_type=doc.content_type,
        size_bytes=doc.size_bytes,
        created_at=row[1],
    )


def list_documents(conn: psycopg.Connection) -> list[StoredDocument]:
    """Every document, oldest first."""
    rows = conn.execute(f"SELECT {_DOCUMENT} FROM documents d ORDER BY d.id").fetchall()
    return [_stored(row) for row in rows]


def get_document(conn: psycopg.Connection, document_id: int) -> tuple[StoredDocument, str] | None:
    """The document and its text, or None when there is no such document."""
    row = conn.execute(
        f"SELECT {_DOCUMENT}, d.text FROM documents d WHERE d.id = %s", (document_id,)
    ).fetchone()
    return (_stored(row), row[6]) if row else None


def delete_document(conn: psycopg.Connection, document_id: int) -> bool:
    """Delete the document and its chunks (one statement: the foreign key cascades).

    False when there was no such document.
    """
    row = conn.execute("DELETE FROM documents WHERE id = %s RETURNING id", (document_id,))
    return row.fetchone() is not None
