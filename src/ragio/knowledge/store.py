"""SQL for documents and chunks. Every value is bound as a parameter, never formatted."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from ragcore.api.problems import ProblemError
from ragcore.knowledge.documents import RENAME_ADVICE, NameTaken, StoredDocument, StoreDocument
from ragio.db.pool import in_thread

# The columns a StoredDocument is read from, for a documents row ``d``.
_DOCUMENT = """d.id, d.name, d.content_type, d.size_bytes, d.created_at,
               (SELECT count(*) FROM chunks c WHERE c.document_id = d.id), d.source_url"""


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, for COPY's text format (a query binds ``ragio.db.vectors``'
    binary form instead).

    Each value is written as the float4 pgvector keeps of it, in 9 significant digits
    (which give that float4 back exactly), all in one formatting step: for 3,072
    dimensions about 3 times faster than ``repr`` of each value (~0.75 ms a vector)."""
    values = np.asarray(vector, dtype=np.float32).tolist()
    return _literal_format(len(values)) % tuple(values)


@functools.lru_cache(maxsize=8)
def _literal_format(dimensions: int) -> str:
    return "[" + ",".join(["%.9g"] * dimensions) + "]"


def _stored(row: Sequence[Any], created: bool = False) -> StoredDocument:
    return StoredDocument(
        id=row[0],
        name=row[1],
        content_type=row[2],
        size_bytes=row[3],
        created_at=row[4],
        chunk_count=row[5],
        created=created,
        source_url=row[6],
    )


def find_document(conn: psycopg.Connection, content_hash: str) -> StoredDocument | None:
    row = conn.execute(
        f"SELECT {_DOCUMENT} FROM documents d WHERE d.content_hash = %s", (content_hash,)
    ).fetchone()
    return _stored(row) if row else None


def find_documents(
    conn: psycopg.Connection, content_hashes: Sequence[str]
) -> list[StoredDocument | None]:
    rows = conn.execute(
        f"SELECT {_DOCUMENT}, d.content_hash FROM documents d WHERE d.content_hash = ANY(%s)",
        (list(content_hashes),),
    ).fetchall()
    found = {row[-1]: _stored(row[:-1]) for row in rows}
    return [found.get(digest) for digest in content_hashes]


def find_named(conn: psycopg.Connection, names: Sequence[str]) -> list[list[StoredDocument]]:
    """For each name, the documents holding it, oldest first."""
    rows = conn.execute(
        f"SELECT {_DOCUMENT}, d.name FROM documents d WHERE d.name = ANY(%s) ORDER BY d.id",
        (list(names),),
    ).fetchall()
    found: dict[str, list[StoredDocument]] = {}
    for row in rows:
        found.setdefault(row[-1], []).append(_stored(row[:-1]))
    return [found.get(name, []) for name in names]


# The class of the transaction-level advisory locks taken on a document name while a new
# version of it is stored (the second key is the name's hash): uploads of one name wait in turn.
NAME_LOCK_CLASS = 1_019


def changed_meanwhile(name: str) -> ProblemError:
    return ProblemError(
        409,
        f"another upload of a document named {name[:80]!r} was stored while this one was "
        "being embedded; nothing was stored: send it again (with replace to replace that one)",
        field="name",
    )


def _lock_name(conn: psycopg.Connection, name: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (NAME_LOCK_CLASS, name))


def rename_document(conn: psycopg.Connection, document_id: int, name: str) -> StoredDocument | None:
    """Give the document ``document_id`` the name ``name``: ``change_document``."""
    return change_document(conn, document_id, name, None)


def change_document(
    conn: psycopg.Connection, document_id: int, name: str | None, source_url: str | None
) -> StoredDocument | None:
    """Give the document ``document_id`` the name ``name`` (under the name's lock, as a
    new version is stored: NameTaken when another document holds it) and the
    ``source_url`` ("" for none), each when given; None when there is no such document."""
    with conn.transaction():
        if name is not None:
            _lock_name(conn, name)
            [holders] = find_named(conn, [name])
            others = [doc for doc in holders if doc.id != document_id]
            if others:
                raise NameTaken(name, others, RENAME_ADVICE)
            conn.execute("UPDATE documents SET name = %s WHERE id = %s", (name, document_id))
        if source_url is not None:
            conn.execute(
                "UPDATE documents SET source_url = %s WHERE id = %s",
                (source_url or None, document_id),
            )
        row = conn.execute(
            f"SELECT {_DOCUMENT} FROM documents d WHERE d.id = %s", (document_id,)
        ).fetchone()
    return _stored(row) if row else None


def _lock_names(conn: psycopg.Connection, docs: Sequence[StoreDocument]) -> None:
    """Take each name's lock, in one order (two groups never wait on each other), and check
    that the documents holding it are still those the new version replaces (unless its
    content was stored meanwhile, by the upload it raced with: then it is a duplicate)."""
    for name in sorted({doc.name for doc in docs}):
        _lock_name(conn, name)
    for doc in docs:
        if find_document(conn, doc.content_hash) is not None:
            continue  # the same content was stored meanwhile: it is that one, replacing nothing
        holders = conn.execute(
            "SELECT id FROM documents WHERE name = %s AND content_hash <> %s",
            (doc.name, doc.content_hash),
        ).fetchall()
        if {row[0] for row in holders} != set(doc.replaces):
            raise changed_meanwhile(doc.name)


@in_thread
def store_documents(
    conn: psycopg.Connection, docs: Sequence[StoreDocument]
) -> list[StoredDocument]:
    """Insert the documents and all their chunks in one transaction (all or nothing); the
    documents each replaces (``replaces``) are deleted in it, chunks and all.

    A document whose content was stored meanwhile comes back as the one stored (and
    replaces nothing). When the documents holding a name are no longer those the new
    version replaces, nothing is stored: a 409 problem says to send it again. The
    chunks of all the documents go in with one COPY: one statement, so the
    statement-level triggers that keep the full-text statistics run once, not per chunk.
    """
    for doc in docs:
        if len(doc.chunks) != len(doc.vectors):
            raise ValueError(f"{len(doc.chunks)} chunks but {len(doc.vectors)} vectors")
    results: list[StoredDocument] = []
    with conn.transaction():
        _lock_names(conn, docs)
        new: list[tuple[int, StoreDocument]] = []
        for doc in docs:
            row = conn.execute(
                """INSERT INTO documents
                          (name, content_hash, text, content_type, size_bytes, source_url)
                   VALUES (%s, %s, %s, %s, %s, %s)
                   ON CONFLICT (content_hash) DO NOTHING RETURNING id, created_at""",
                (
                    doc.name,
                    doc.content_hash,
                    doc.text,
                    doc.content_type,
                    doc.size_bytes,
                    doc.source_url,
                ),
            ).fetchone()
            if row is None:
                existing = find_document(conn, doc.content_hash)
                assert existing is not None
                results.append(existing)
                continue
            new.append((row[0], doc))
            if doc.replaces:  # the old version leaves with its chunks (the key cascades)
                conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (list(doc.replaces),))
            results.append(
                StoredDocument(
                    id=row[0],
                    name=doc.name,
                    chunk_count=len(doc.chunks),
                    created=True,
                    content_type=doc.content_type,
                    size_bytes=doc.size_bytes,
                    created_at=row[1],
                    source_url=doc.source_url,
                )
            )
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY chunks (document_id, position, heading_path, text, embedding) FROM STDIN"
            ) as copy,
        ):
            for doc_id, doc in new:
                for chunk, vector in zip(doc.chunks, doc.vectors, strict=True):
                    copy.write_row(
                        (
                            doc_id,
                            chunk.position,
                            list(chunk.heading_path),
                            chunk.text,
                            vector_literal(vector),
                        )
                    )
    return results


def store_document(conn: psycopg.Connection, doc: StoreDocument) -> StoredDocument:
    """One document, with all its chunks, in one transaction."""
    [stored] = store_documents(conn, [doc])
    return stored


def list_documents(
    conn: psycopg.Connection,
    limit: int | None = None,
    offset: int = 0,
    pattern: str | None = None,
    newest: bool = False,
) -> tuple[list[StoredDocument], int]:
    """A page of the documents, oldest first (``newest``: the last added first), and how
    many there are in all; only those whose name matches the ILIKE ``pattern``
    (backslash escapes) when given."""
    where, params = ("WHERE d.name ILIKE %s", [pattern]) if pattern is not None else ("", [])
    total = conn.execute(f"SELECT count(*) FROM documents d {where}", params).fetchone()
    order = "d.id DESC" if newest else "d.id"
    rows = conn.execute(
        f"SELECT {_DOCUMENT} FROM documents d {where} ORDER BY {order} LIMIT %s OFFSET %s",
        [*params, limit, offset],
    ).fetchall()
    return [_stored(row) for row in rows], total[0] if total else 0


def get_document(conn: psycopg.Connection, document_id: int) -> tuple[StoredDocument, str] | None:
    """The document and its text, or None when there is no such document."""
    row = conn.execute(
        f"SELECT {_DOCUMENT}, d.text FROM documents d WHERE d.id = %s", (document_id,)
    ).fetchone()
    return (_stored(row), row[7]) if row else None


def delete_documents(conn: psycopg.Connection, reference: int | str) -> list[StoredDocument]:
    """Delete the document ``reference`` names, chunks and all: by its id (an int), or
    (text) by its id when a document has it, else by its name (every document holding
    that name). The documents deleted; none when nothing matched."""
    with conn.transaction():
        found: list[StoredDocument] = []
        given = str(reference)
        if given.isascii() and given.isdigit() and len(given) <= 18:
            row = conn.execute(
                f"SELECT {_DOCUMENT} FROM documents d WHERE d.id = %s", (int(given),)
            ).fetchone()
            found = [_stored(row)] if row else []
        if not found and isinstance(reference, str):
            [found] = find_named(conn, [reference.strip()])
        if found:
            conn.execute("DELETE FROM documents WHERE id = ANY(%s)", ([d.id for d in found],))
    return found


def chunk_excerpts(
    conn: psycopg.Connection, chunk_ids: Sequence[int], chars: int
) -> dict[int, tuple[str, str]]:
    """For each chunk that still exists: its document's name and its first ``chars``
    characters."""
    rows = conn.execute(
        """SELECT c.id, d.name, left(c.text, %s) FROM chunks c
           JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s)""",
        (chars, list(chunk_ids)),
    ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}
