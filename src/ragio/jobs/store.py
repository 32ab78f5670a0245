"""SQL of the background jobs (``jobs`` and ``job_files``, migration 021; the rules are
``ragcore.jobs``). Every value is bound as a parameter.

A process changes a running job only while it holds it (``claimed_by`` is its name and the
job is still ``running``): one that went quiet and lost its job to another process writes
nothing more to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.jobs import (
    MAX_ATTEMPTS,
    STALE_AFTER,
    UNFINISHED,
    OnCancel,
    cancelled_before_start,
    gone_reason,
    on_cancel,
)


@attrs.frozen
class Job:
    id: int
    kind: str
    key: str | None
    status: str
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    run_after: datetime
    progress_done: int
    progress_total: int
    result: dict[str, Any] | None
    problem: dict[str, Any] | None
    claimed_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    cancel_requested_at: datetime | None = None


#: the channel a job's end is announced on (its id as the payload), at the commit of the
#: change that ended it: a request waiting for the job hears it (``ragio.jobs.waiting``)
FINISHED_CHANNEL = "ragchat_job_finished"
#: the channel a new job is announced on (its kind as the payload), at its commit: a
#: worker in another process (a supervising `serve`'s job worker, `ragchat worker`)
#: starts it at once rather than at its next look (``ragio.jobs.worker``)
QUEUED_CHANNEL = "ragchat_job_queued"


def _ended(conn: psycopg.Connection, job_id: int) -> None:
    """A job has ended (done, failed or cancelled): its file goes, and whoever waits on it
    (``ragio.jobs.waiting``) is told."""
    conn.execute("DELETE FROM job_files WHERE job_id = %s", (job_id,))
    conn.execute("SELECT pg_notify(%s, %s)", (FINISHED_CHANNEL, str(job_id)))


_JOB = """id, kind, key, status, payload, attempts, max_attempts, run_after, progress_done,
          progress_total, result, problem, claimed_by, created_at, started_at, finished_at,
          heartbeat_at, cancel_requested_at"""


def _job(row: Sequence[Any] | None) -> Job | None:
    return None if row is None else Job(*row)


def enqueue(
    conn: psycopg.Connection,
    kind: str,
    payload: dict[str, Any],
    now: datetime,
    *,
    key: str | None = None,
    data: bytes | None = None,
    max_attempts: int = MAX_ATTEMPTS,
) -> tuple[Job, bool]:
    """Queue a job (with its file ``data``); (the job, True). With a ``key`` that an
    unfinished job of ``kind`` already has: (that job, False), nothing queued."""
    while True:  # again when the unfinished job of the key ends between the two
        with conn.transaction():
            row = conn.execute(
                f"""INSERT INTO jobs (kind, key, payload, max_attempts, run_after, created_at)
                    VALUES (%s, %s, %s, %s, %s, %s)
                    ON CONFLICT (kind, key) WHERE key IS NOT NULL
                                              AND status IN ('queued', 'running')
                    DO NOTHING
                    RETURNING {_JOB}""",
                (kind, key, Jsonb(payload), max_attempts, now, now),
            ).fetchone()
            if row is None:
                held = conn.execute(
                    f"""SELECT {_JOB} FROM jobs
                        WHERE kind = %s AND key = %s AND status = ANY(%s)""",
                    (kind, key, list(UNFINISHED)),
                ).fetchone()
                if held is not None:
                    return Job(*held), False
                continue
            job = Job(*row)
            if data is not None:
                conn.execute("INSERT INTO job_files (job_id, data) VALUES (%s, %s)", (job.id, data))
            conn.execute("SELECT pg_notify(%s, %s)", (QUEUED_CHANNEL, kind))
            return job, True


def claim(
    conn: psycopg.Connection, kinds: Sequence[str], process: str, now: datetime
) -> Job | None:
    """The oldest due job of ``kinds``, now running and held by ``process``; None when
    none is due (jobs other processes are claiming at this moment are skipped)."""
    return _job(
        conn.execute(
            f"""UPDATE jobs
                SET status = 'running', claimed_by = %(process)s, attempts = attempts + 1,
                    started_at = coalesce(started_at, %(now)s), heartbeat_at = %(now)s
                WHERE id = (SELECT id FROM jobs
                            WHERE status = 'queued' AND run_after <= %(now)s
                              AND kind = ANY(%(kinds)s)
                            ORDER BY run_after, id
                            LIMIT 1
                            FOR UPDATE SKIP LOCKED)
                RETURNING {_JOB}""",
            {"process": process, "now": now, "kinds": list(kinds)},
        ).fetchone()
    )


def file_of(conn: psycopg.Connection, job_id: int) -> bytes | None:
    row = conn.execute("SELECT data FROM job_files WHERE job_id = %s", (job_id,)).fetchone()
    return None if row is None else bytes(row[0])


def touch(
    conn: psycopg.Connection, job_ids: Sequence[int], process: str, now: datetime
) -> set[int]:
    """The heartbeat of the jobs ``process`` runs; the ids it still holds (one it lost,
    taken for gone while it was quiet, is not among them)."""
    rows = conn.execute(
        """UPDATE jobs SET heartbeat_at = %s
           WHERE id = ANY(%s) AND claimed_by = %s AND status = 'running'
           RETURNING id""",
        (now, list(job_ids), process),
    ).fetchall()
    return {row[0] for row in rows}


def set_progress(
    conn: psycopg.Connection,
    job_id: int,
    process: str,
    now: datetime,
    *,
    total: int | None = None,
    add: int = 0,
    done: int | None = None,
) -> None:
    """A new ``total`` (progress starts again from 0, or from ``done``), or ``add`` done."""
    conn.execute(
        """UPDATE jobs
           SET progress_total = coalesce(%(total)s, progress_total),
               progress_done = CASE WHEN %(done)s::integer IS NOT NULL THEN %(done)s
                   WHEN %(total)s::integer IS NULL
                   THEN LEAST(progress_total, progress_done + %(add)s) ELSE 0 END,
               heartbeat_at = %(now)s
           WHERE id = %(id)s AND claimed_by = %(process)s AND status = 'running'""",
        {"total": total, "add": add, "done": done, "now": now, "id": job_id, "process": process},
    )


def finish(
    conn: psycopg.Connection,
    job_id: int,
    process: str,
    result: dict[str, Any] | None,
    now: datetime,
) -> bool:
    """done, with its ``result``; its file goes. False when ``process`` no longer held it."""
    with conn.transaction():
        row = conn.execute(
            """UPDATE jobs
               SET status = 'done', result = %s, problem = NULL, finished_at = %s,
                   heartbeat_at = %s, progress_done = progress_total
               WHERE id = %s AND claimed_by = %s AND status = 'running'
               RETURNING id""",
            (Jsonb(result), now, now, job_id, process),
        ).fetchone()
        if row is not None:
            _ended(conn, job_id)
    return row is not None


def fail(
    conn: psycopg.Connection,
    job_id: int,
    process: str,
    problem: dict[str, Any],
    now: datetime,
    retry_at: datetime | None,
) -> None:
    """The attempt failed with ``problem``: queued again at ``retry_at``, or (None) failed
    for good, its file gone."""
    with conn.transaction():
        if retry_at is not None:
            row = conn.execute(
                """UPDATE jobs
                   SET status = 'queued', problem = %s, run_after = %s, claimed_by = NULL
                   WHERE id = %s AND claimed_by = %s AND status = 'running'
                     AND cancel_requested_at IS NULL
                   RETURNING id""",
                (Jsonb(problem), retry_at, job_id, process),
            ).fetchone()
            if row is None:  # asked to stop: not tried again
                _end_cancelled(conn, job_id, process, {"stopped": "after a failed attempt"}, now)
            return
        row = conn.execute(
            """UPDATE jobs SET status = 'failed', problem = %s, finished_at = %s
               WHERE id = %s AND claimed_by = %s AND status = 'running' RETURNING id""",
            (Jsonb(problem), now, job_id, process),
        ).fetchone()
        if row is not None:
            _ended(conn, job_id)


def hand_back(conn: psycopg.Connection, job_ids: Sequence[int], process: str, now: datetime) -> int:
    """``process`` stops: its jobs are queued again at once, their attempt not counted
    (those asked to stop are cancelled instead)."""
    with conn.transaction():
        for job_id in job_ids:
            _end_cancelled(conn, job_id, process, {"stopped": "as its process stopped"}, now)
        return conn.execute(
            """UPDATE jobs
               SET status = 'queued', claimed_by = NULL, run_after = %s,
                   attempts = GREATEST(0, attempts - 1)
               WHERE id = ANY(%s) AND claimed_by = %s AND status = 'running'""",
            (now, list(job_ids), process),
        ).rowcount


def cancel(conn: psycopg.Connection, job_id: int, now: datetime) -> tuple[Job, OnCancel] | None:
    """Cancel the job (``ragcore.jobs.on_cancel``): a queued one at once (its file gone,
    its end announced), a running one asked to stop. The job as it is then (unchanged
    when it had ended) and what was done; None when there is no such job."""
    with conn.transaction():
        job = _job(
            conn.execute(f"SELECT {_JOB} FROM jobs WHERE id = %s FOR UPDATE", (job_id,)).fetchone()
        )
        if job is None:
            return None
        action = on_cancel(job.status)
        if action == "cancelled":
            conn.execute(
                """UPDATE jobs
                   SET status = 'cancelled', result = %s, finished_at = %s,
                       cancel_requested_at = %s, claimed_by = NULL
                   WHERE id = %s""",
                (Jsonb(cancelled_before_start()), now, now, job_id),
            )
            _ended(conn, job_id)
        elif action == "asked":
            conn.execute(
                """UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, %s)
                   WHERE id = %s""",
                (now, job_id),
            )
        changed = _job(conn.execute(f"SELECT {_JOB} FROM jobs WHERE id = %s", (job_id,)).fetchone())
        return (changed or job), action


def cancel_requested(conn: psycopg.Connection, job_id: int) -> bool:
    """Whether the owner asked the job to stop (read by its process at each stop point)."""
    row = conn.execute("SELECT cancel_requested_at FROM jobs WHERE id = %s", (job_id,)).fetchone()
    return row is not None and row[0] is not None


def stopped(
    conn: psycopg.Connection, job_id: int, process: str, result: dict[str, Any], now: datetime
) -> bool:
    """The running job stopped as asked: cancelled, with ``result`` (what it had done);
    its file goes. False when ``process`` no longer held it."""
    with conn.transaction():
        return _end_cancelled(conn, job_id, process, result, now)


def _end_cancelled(
    conn: psycopg.Connection, job_id: int, process: str, result: dict[str, Any], now: datetime
) -> bool:
    """A running job ``process`` holds, asked to stop, ends cancelled (else nothing)."""
    row = conn.execute(
        """UPDATE jobs
           SET status = 'cancelled', result = %s, finished_at = %s, heartbeat_at = %s
           WHERE id = %s AND claimed_by = %s AND status = 'running'
             AND cancel_requested_at IS NOT NULL
           RETURNING id""",
        (Jsonb(result), now, now, job_id, process),
    ).fetchone()
    if row is not None:
        _ended(conn, job_id)
    return row is not None


def requeue_stale(conn: psycopg.Connection, now: datetime) -> list[Job]:
    """Running jobs whose process went quiet: queued again (resumed by whichever process
    claims them next), or failed when that was their last attempt. The jobs as they were."""
    with conn.transaction():
        rows = conn.execute(
            f"""SELECT {_JOB} FROM jobs
                WHERE status = 'running' AND heartbeat_at < %s
                FOR UPDATE SKIP LOCKED""",
            (now - STALE_AFTER,),
        ).fetchall()
        found = [Job(*row) for row in rows]
        for job in found:
            problem = {
                "type": "about:blank",
                "title": "Service Unavailable",
                "status": 503,
                "detail": gone_reason(job.claimed_by, job.heartbeat_at),
            }
            if job.cancel_requested_at is not None:  # asked to stop: not resumed
                conn.execute(
                    """UPDATE jobs SET status = 'cancelled', problem = %s, claimed_by = NULL,
                                      result = %s, finished_at = %s
                       WHERE id = %s""",
                    (Jsonb(problem), Jsonb({"stopped": "as its process went quiet"}), now, job.id),
                )
                _ended(conn, job.id)
                continue
            last = job.attempts >= job.max_attempts
            conn.execute(
                """UPDATE jobs
                   SET status = %s, problem = %s, claimed_by = NULL, run_after = %s,
                       finished_at = CASE WHEN %s THEN %s END
                   WHERE id = %s""",
                ("failed" if last else "queued", Jsonb(problem), now, last, now, job.id),
            )
            if last:
                _ended(conn, job.id)
    return found


def unfinished_with_key(conn: psycopg.Connection, kind: str, key: str) -> Job | None:
    return _job(
        conn.execute(
            f"SELECT {_JOB} FROM jobs WHERE kind = %s AND key = %s AND status = ANY(%s)",
            (kind, key, list(UNFINISHED)),
        ).fetchone()
    )


def get_job(conn: psycopg.Connection, job_id: int, kind: str | None = None) -> Job | None:
    return _job(
        conn.execute(
            f"SELECT {_JOB} FROM jobs WHERE id = %s AND (%s::text IS NULL OR kind = %s)",
            (job_id, kind, kind),
        ).fetchone()
    )


def list_jobs(
    conn: psycopg.Connection,
    kind: str | None,
    status: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Job], int]:
    """A page of the jobs, newest first, and how many there are."""
    where = """(%(kind)s::text IS NULL OR kind = %(kind)s)
               AND (%(status)s::text IS NULL OR status = %(status)s)"""
    params = {"kind": kind, "status": status, "limit": limit, "offset": offset}
    rows = conn.execute(
        f"SELECT {_JOB} FROM jobs WHERE {where} ORDER BY id DESC LIMIT %(limit)s OFFSET %(offset)s",
        params,
    ).fetchall()
    total = conn.execute(f"SELECT count(*) FROM jobs WHERE {where}", params).fetchone()
    return [Job(*row) for row in rows], total[0] if total else 0
