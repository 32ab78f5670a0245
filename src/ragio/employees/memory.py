"""SQL for role memory (migration 006). Every value is bound as a parameter.

A duplicate (the same whole normalised text for the same role) is refused by the
``UNIQUE (role, content_hash)`` constraint: ``INSERT … ON CONFLICT DO NOTHING`` returns
no row, and the caller answers 409. Vectors are in the active embedder's space; items
without one (starter seeds, or items from before the space changed) are embedded from
their text before a search (``ragcore.employees.memory.embed_missing``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ragcore.employees.memory import FetchRoleMemory, MemoryItem, NewMemory
from ragcore.employees.profile import profile_items
from ragio.db.pool import in_thread
from ragio.db.vectors import vector_param
from ragio.employees.profile import get_profile

_COLUMNS = "id, role, text, tags, source, importance, created_at"
_FIXED_ORDER = (
    "array_position(ARRAY['owner', 'profile', 'learned'], source), importance DESC, created_at, id"
)


def _item(row: Sequence[Any], similarity: float | None = None) -> MemoryItem:
    return MemoryItem(
        id=row[0],
        role=row[1],
        text=row[2],
        tags=tuple(row[3]),
        source=row[4],
        importance=row[5],
        created_at=row[6],
        similarity=similarity,
    )


def insert_seeds(conn: psycopg.Connection, role: str, memories: Sequence[NewMemory]) -> None:
    """Store a role's starter memories; those already stored are left as they are."""
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO role_memory (role, text, tags, source, importance, content_hash)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (role, content_hash) DO NOTHING""",
            [
                (role, m.text, list(m.tags), m.source, m.importance, m.content_hash)
                for m in memories
            ],
        )


def add_memory(
    conn: psycopg.Connection, role: str, memory: NewMemory, vector: Sequence[float] | None
) -> MemoryItem | None:
    """The stored item, or None when the role already holds the same normalised text."""
    row = conn.execute(
        f"""INSERT INTO role_memory
                (role, text, tags, source, importance, content_hash, embedding)
            VALUES (%s, %s, %s, %s, %s, %s, %s::vector)
            ON CONFLICT (role, content_hash) DO NOTHING
            RETURNING {_COLUMNS}""",
        (
            role,
            memory.text,
            list(memory.tags),
            memory.source,
            memory.importance,
            memory.content_hash,
            vector_param(vector) if vector is not None else None,
        ),
    ).fetchone()
    return _item(row) if row else None


def find_duplicate(conn: psycopg.Connection, role: str, digest: str) -> int | None:
    row = conn.execute(
        "SELECT id FROM role_memory WHERE role = %s AND content_hash = %s", (role, digest)
    ).fetchone()
    return row[0] if row else None


def delete_memory(conn: psycopg.Connection, role: str, item_id: int) -> bool:
    deleted = conn.execute(
        "DELETE FROM role_memory WHERE role = %s AND id = %s", (role, item_id)
    ).rowcount
    return deleted > 0


def list_memory(
    conn: psycopg.Connection,
    role: str,
    tags: Sequence[str] = (),
    vector: Sequence[float] | None = None,
    limit: int = 100,
) -> list[MemoryItem]:
    """The role's items: with ``tags``, only those holding at least one of them; with
    ``vector``, the nearest first (each with its similarity), otherwise owner instructions,
    then profile entries, then learned patterns, most important first."""
    where = "role = %(role)s"
    if tags:
        where += " AND tags && %(tags)s::text[]"
    params: dict[str, Any] = {"role": role, "tags": list(tags), "limit": int(limit)}
    if vector is None:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM role_memory WHERE {where} "
            f"ORDER BY {_FIXED_ORDER} LIMIT %(limit)s",
            params,
        ).fetchall()
        return [_item(row) for row in rows]
    params |= {"v": vector_param(vector), "dims": len(vector)}
    rows = conn.execute(
        f"""SELECT {_COLUMNS}, 1 - (embedding <=> %(v)s::vector) AS similarity
            FROM role_memory
            WHERE {where} AND embedding IS NOT NULL AND vector_dims(embedding) = %(dims)s
            ORDER BY embedding <=> %(v)s::vector, id
            LIMIT %(limit)s""",
        params,
    ).fetchall()
    return [_item(row[:7], float(row[7])) for row in rows]


def context_items(conn: psycopg.Connection, request: FetchRoleMemory) -> list[MemoryItem]:
    """Execute a ``FetchRoleMemory`` effect: every owner and profile item (the business
    profile record first among them, as ``profile`` items), and the learned items nearest
    the query's vector."""
    record = profile_items(request.role, get_profile(conn))
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM role_memory WHERE role = %s AND source <> 'learned' "
        f"ORDER BY {_FIXED_ORDER}",
        (request.role,),
    ).fetchall()
    fixed = [_item(row) for row in rows]
    learned = conn.execute(
        f"""SELECT {_COLUMNS}, 1 - (embedding <=> %(v)s::vector) AS similarity
            FROM role_memory
            WHERE role = %(role)s AND source = 'learned'
              AND embedding IS NOT NULL AND vector_dims(embedding) = %(dims)s
            ORDER BY embedding <=> %(v)s::vector, id
            LIMIT %(limit)s""",
        {
            "role": request.role,
            "v": vector_param(request.vector),
            "dims": len(request.vector),
            "limit": int(request.learned_limit),
        },
    ).fetchall()
    return record + fixed + [_item(row[:7], float(row[7])) for row in learned]


def unembedded(conn: psycopg.Connection, role: str, dimensions: int) -> list[tuple[int, str]]:
    return conn.execute(
        """SELECT id, text FROM role_memory
           WHERE role = %s AND (embedding IS NULL OR vector_dims(embedding) <> %s)
           ORDER BY id""",
        (role, int(dimensions)),
    ).fetchall()


@in_thread
def set_embeddings(conn: psycopg.Connection, pairs: Sequence[tuple[int, Sequence[float]]]) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "UPDATE role_memory SET embedding = %s::vector WHERE id = %s",
            [(vector_param(vector), item_id) for item_id, vector in pairs],
        )
