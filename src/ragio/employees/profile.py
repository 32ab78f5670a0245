"""SQL for the business profile (migration 007): one row, created by the first write.
Every value is bound as a parameter; column names come from a fixed list."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime

import psycopg

from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.memory import seed_memories
from ragcore.employees.profile import (
    MAX_DOCUMENTS,
    MAX_MEMORIES,
    OWNER_FIELDS,
    Activity,
    ActivityDocument,
    Profile,
    first_line,
)

_COLUMNS = (
    "description, products, tone, language, name, opening_hours, timezone, learned_summary, "
    "learned_at, updated_at"
)


@functools.cache
def _seed_hashes() -> frozenset[str]:
    return frozenset(
        memory.content_hash
        for role in BUILT_IN.values()
        for memory in seed_memories(role.memory_seeds)
    )


def get_profile(conn: psycopg.Connection) -> Profile:
    """The profile; every field empty when it was never set."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM business_profile").fetchone()
    return Profile(*row) if row else Profile()


def patch_profile(conn: psycopg.Connection, fields: Mapping[str, str]) -> Profile:
    """Set the owner ``fields`` (checked by ``check_profile_patch``); the others are kept."""
    names = [name for name in OWNER_FIELDS if name in fields]
    values = [fields[name] for name in names]
    columns = ", ".join(names)
    placeholders = ", ".join(["%s"] * len(names))
    updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in names)
    row = conn.execute(
        f"""INSERT INTO business_profile ({columns}, updated_at) VALUES ({placeholders}, now())
            ON CONFLICT (only_row) DO UPDATE SET {updates}, updated_at = now()
            RETURNING {_COLUMNS}""",
        values,
    ).fetchone()
    return Profile(*row)


def set_summary(conn: psycopg.Connection, summary: str, now: datetime) -> Profile:
    row = conn.execute(
        f"""INSERT INTO business_profile (learned_summary, learned_at) VALUES (%s, %s)
            ON CONFLICT (only_row) DO UPDATE
            SET learned_summary = EXCLUDED.learned_summary, learned_at = EXCLUDED.learned_at
            RETURNING {_COLUMNS}""",
        (summary, now),
    ).fetchone()
    return Profile(*row)


def activity(conn: psycopg.Connection) -> Activity:
    """What the summary is learned from: the newest documents with their first lines, and
    the role memories that matter most (each text once): learned patterns first, then the
    owner's instructions, leaving out the built-in roles' starter seeds, which say nothing
    about this business."""
    documents = conn.execute(
        "SELECT name, left(text, 2000) FROM documents ORDER BY created_at DESC, id DESC LIMIT %s",
        (MAX_DOCUMENTS,),
    ).fetchall()
    memories = conn.execute(
        """SELECT min(text) FROM role_memory
           WHERE source IN ('owner', 'learned') AND NOT content_hash = ANY (%s)
           GROUP BY content_hash
           ORDER BY bool_or(source = 'learned') DESC, max(importance) DESC,
                    min(created_at), content_hash
           LIMIT %s""",
        (list(_seed_hashes()), MAX_MEMORIES),
    ).fetchall()
    return Activity(
        documents=tuple(ActivityDocument(name, first_line(text)) for name, text in documents),
        memories=tuple(text for (text,) in memories),
    )
