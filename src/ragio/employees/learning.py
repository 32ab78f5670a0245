"""SQL for learning from past interactions (migration 008); the rule itself is
``ragcore.employees.learning``. Every value is bound as a parameter."""

from __future__ import annotations

from datetime import datetime, timedelta

import psycopg

from ragcore.employees.learning import History, LearnPattern, PastQuestion, RecordInteraction
from ragcore.employees.memory import MemoryItem
from ragio.db.vectors import vector_param
from ragio.employees.memory import add_memory

#: at most this many nearest recorded questions are read to count their askers
NEAREST_LIMIT = 200
#: the class of the transaction-level advisory lock on a role (its name's hash is the second
#: key) that recording and learning take, in every process: one asker's questions are counted
#: against the daily limit one at a time, and each question sees every one recorded before it
ROLE_LOCK_CLASS = 1_021


def _lock_role(conn: psycopg.Connection, role: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ROLE_LOCK_CLASS, role))


def record(conn: psycopg.Connection, effect: RecordInteraction, now: datetime) -> History:
    """Execute a ``RecordInteraction`` effect, in one transaction."""
    item, policy = effect.interaction, effect.policy
    since = now - timedelta(days=policy.window_days)
    with conn.transaction():
        _lock_role(conn, item.role)
        conn.execute(
            """DELETE FROM role_interactions
               WHERE role = %s AND at < %s AND learned_memory IS NULL""",
            (item.role, since),
        )
        [asked_today] = conn.execute(
            """SELECT count(*) FROM role_interactions
               WHERE role = %s AND asker_hash = %s AND at >= %s""",
            (item.role, item.asker_hash, now - timedelta(days=1)),
        ).fetchone()
        if asked_today >= policy.per_asker_daily:
            return History(recorded=False)
        vector = vector_param(item.vector)
        conn.execute(
            """INSERT INTO role_interactions (role, asker_hash, question, documents, embedding, at)
               VALUES (%s, %s, %s, %s, %s::vector, %s)""",
            (item.role, item.asker_hash, item.question, list(item.documents), vector, now),
        )
        near = """role = %(role)s AND embedding IS NOT NULL
                  AND vector_dims(embedding) = %(dims)s
                  AND 1 - (embedding <=> %(v)s::vector) >= %(similarity)s"""
        params = {
            "role": item.role,
            "dims": len(item.vector),
            "v": vector,
            "similarity": policy.similarity,
            "since": since,
            "limit": NEAREST_LIMIT,
        }
        known = conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM role_interactions "
            f"WHERE {near} AND learned_memory IS NOT NULL)",
            params,
        ).fetchone()[0]
        rows = conn.execute(
            f"""SELECT id, asker_hash, question, documents, at FROM role_interactions
                WHERE {near} AND at >= %(since)s
                ORDER BY embedding <=> %(v)s::vector, id
                LIMIT %(limit)s""",
            params,
        ).fetchall()
    similar = tuple(PastQuestion(r[0], r[1], r[2], tuple(r[3]), r[4]) for r in rows)
    return History(recorded=True, similar=similar, known=known)


def learn(conn: psycopg.Connection, effect: LearnPattern) -> MemoryItem | None:
    """Execute a ``LearnPattern`` effect, in one transaction; nothing when the question it
    came from was spent or became a pattern meanwhile (another process learned it)."""
    with conn.transaction():
        _lock_role(conn, effect.role)
        source = conn.execute(
            "SELECT learned_memory FROM role_interactions WHERE id = %s",
            (effect.lesson.source_id,),
        ).fetchone()
        if source is None or source[0] is not None:
            return None
        stored = add_memory(conn, effect.role, effect.lesson.memory, None)
        if stored is None:  # the role already holds this text
            return None
        conn.execute(
            "UPDATE role_interactions SET learned_memory = %s WHERE id = %s",
            (stored.id, effect.lesson.source_id),
        )
        conn.execute(
            "DELETE FROM role_interactions WHERE role = %s AND id = ANY (%s)",
            (effect.role, list(effect.lesson.spent_ids)),
        )
        conn.execute(
            """DELETE FROM role_memory WHERE id IN (
                   SELECT id FROM role_memory WHERE role = %s AND source = 'learned'
                   ORDER BY importance DESC, created_at DESC, id DESC
                   OFFSET %s)""",
            (effect.role, effect.max_learned),
        )
    return stored
