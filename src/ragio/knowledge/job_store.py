"""SQL for the background ingestion jobs of large uploads (``document_jobs``, migration
019; the rules are ``ragcore.knowledge.jobs``). Every value is bound as a parameter."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.knowledge.jobs import UNFINISHED, abandoned, abandoned_reason


@attrs.frozen
class StoredJob:
    id: int
    status: str
    name: str
    format: str
    charset: str | None
    size_bytes: int
    chunks_total: int
    chunks_done: int
    result: dict[str, Any] | None  # the DocumentAdded response, once done
    problem: dict[str, Any] | None  # the problem+json body, once failed
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime


_JOB = """id, status, name, format, charset, size_bytes, chunks_total, chunks_done, result,
          problem, created_at, started_at, finished_at, heartbeat_at"""


def _job(row: Sequence[Any]) -> StoredJob:
    return StoredJob(*row)


def create_job(
    conn: psycopg.Connection, name: str, fmt: str, charset: str | None, size: int, now: datetime
) -> StoredJob:
    row = conn.execute(
        f"""INSERT INTO document_jobs (name, format, charset, size_bytes, created_at,
                                       heartbeat_at)
            VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_JOB}""",
        (name, fmt, charset, size, now, now),
    ).fetchone()
    assert row is not None
    return _job(row)


def get_job(conn: psycopg.Connection, job_id: int) -> StoredJob | None:
    row = conn.execute(f"SELECT {_JOB} FROM document_jobs WHERE id = %s", (job_id,)).fetchone()
    return _job(row) if row else None


def start_job(conn: psycopg.Connection, job_id: int, now: datetime) -> bool:
    """queued -> running; False when the job is no longer queued (marked failed meanwhile)."""
    row = conn.execute(
        """UPDATE document_jobs SET status = 'running', started_at = %s, heartbeat_at = %s
           WHERE id = %s AND status = 'queued' RETURNING id""",
        (now, now, job_id),
    ).fetchone()
    return row is not None


def set_total(conn: psycopg.Connection, job_id: int, total: int, now: datetime) -> None:
    conn.execute(
        """UPDATE document_jobs SET chunks_total = %s, heartbeat_at = %s
           WHERE id = %s AND status = 'running'""",
        (total, now, job_id),
    )


def add_progress(conn: psycopg.Connection, job_id: int, chunks: int, now: datetime) -> None:
    conn.execute(
        """UPDATE document_jobs
           SET chunks_done = LEAST(chunks_total, chunks_done + %s), heartbeat_at = %s
           WHERE id = %s AND status = 'running'""",
        (chunks, now, job_id),
    )


def touch(conn: psycopg.Connection, job_ids: Sequence[int], now: datetime) -> None:
    """The heartbeat of the unfinished jobs this process holds."""
    conn.execute(
        """UPDATE document_jobs SET heartbeat_at = %s
           WHERE id = ANY(%s) AND status IN ('queued', 'running')""",
        (now, list(job_ids)),
    )


def finish_job(
    conn: psycopg.Connection, job_id: int, document_id: int, result: dict[str, Any], now: datetime
) -> None:
    conn.execute(
        """UPDATE document_jobs
           SET status = 'done', chunks_done = chunks_total, document_id = %s, result = %s,
               finished_at = %s, heartbeat_at = %s
           WHERE id = %s AND status = 'running'""",
        (document_id, Jsonb(result), now, now, job_id),
    )


def fail_job(conn: psycopg.Connection, job_id: int, problem: dict[str, Any], now: datetime) -> None:
    conn.execute(
        """UPDATE document_jobs SET status = 'failed', problem = %s, finished_at = %s
           WHERE id = %s AND status IN ('queued', 'running')""",
        (Jsonb(problem), now, job_id),
    )


def fail_abandoned(
    conn: psycopg.Connection, now: datetime, everyone: bool = False, job_id: int | None = None
) -> list[int]:
    """Mark failed the unfinished jobs left by a stopped process (``abandoned``; all of
    them when ``everyone``: no other process can hold one); only ``job_id`` when given.
    The ids marked."""
    marked = []
    with conn.transaction():
        rows = conn.execute(
            """SELECT id, status, heartbeat_at FROM document_jobs
               WHERE status = ANY(%s) AND (%s::bigint IS NULL OR id = %s)
               FOR UPDATE SKIP LOCKED""",
            (list(UNFINISHED), job_id, job_id),
        ).fetchall()
        for found, status, heartbeat_at in rows:
            if not everyone and not abandoned(status, heartbeat_at, now):
                continue
            problem = {
                "type": "about:blank",
                "title": "Service Unavailable",
                "status": 503,
                "detail": abandoned_reason(status, heartbeat_at),
            }
            fail_job(conn, found, problem, now)
            marked.append(found)
    return marked


def unfinished_ids(conn: psycopg.Connection) -> set[int]:
    rows = conn.execute(
        "SELECT id FROM document_jobs WHERE status = ANY(%s)", (list(UNFINISHED),)
    ).fetchall()
    return {row[0] for row in rows}
