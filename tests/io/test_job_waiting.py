"""Waiting for a job inside a request: the end of the job is heard the moment another
process commits it (PostgreSQL NOTIFY), and the wait asks the database nothing meanwhile;
a job still running when the wait is over comes back as it stands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import psycopg
import trio

from ragio.db.pool import Database
from ragio.jobs import store
from ragio.jobs.waiting import wait_for_job

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


@asynccontextmanager
async def opened(database: Database) -> AsyncIterator[Database]:
    await database.open()
    try:
        yield database
    finally:
        await database.close()


def queries_under_way(url: str) -> dict[int, object]:
    """When each other session of the database began its latest statement (live, from
    pg_stat_activity), read on a connection of its own."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            """SELECT pid, query_start FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()"""
        ).fetchall()
    return dict(rows)


def running_job(url: str) -> store.Job:
    with psycopg.connect(url, autocommit=True) as conn:
        store.enqueue(conn, "learn_profile", {}, NOW)
        job = store.claim(conn, ["learn_profile"], "elsewhere", NOW)
    assert job is not None
    return job


async def finished_after(url: str, job: store.Job, seconds: float, ended: list[float]) -> None:
    await trio.sleep(seconds)
    with psycopg.connect(url, autocommit=True) as conn:  # "another process" ends it
        assert store.finish(conn, job.id, "elsewhere", {"learned": True}, NOW)
    ended.append(trio.current_time())


async def test_the_end_of_a_job_another_process_finishes_is_heard_without_asking_again(
    database_url,
):
    job = running_job(database_url)
    ended_at: list[float] = []
    seen: list[dict[int, object]] = []

    async def look_while_waiting() -> None:
        await trio.sleep(0.5)
        seen.append(await trio.to_thread.run_sync(queries_under_way, database_url))
        await trio.sleep(1.0)
        seen.append(await trio.to_thread.run_sync(queries_under_way, database_url))
        await finished_after(database_url, job, 0, ended_at)

    async with opened(Database(database_url)) as database, trio.open_nursery() as nursery:
        nursery.start_soon(look_while_waiting)
        ended = await wait_for_job(database, job, 30)
    heard_after = trio.current_time() - ended_at[0]
    assert (ended.status, ended.result) == ("done", {"learned": True})
    assert heard_after < 0.5  # not at the end of a poll, nor of the 30 s
    # for that second, no session of the service asked the database anything (polling
    # every 0.1 s would have begun ten statements); the waiter's listening session is there
    assert seen[0] and seen[0] == seen[1]


async def test_a_job_still_running_when_the_wait_is_over_comes_back_as_it_stands(database_url):
    job = running_job(database_url)
    started = trio.current_time()
    async with opened(Database(database_url)) as database:
        still = await wait_for_job(database, job, 0.5)
    assert still.status == "running" and 0.5 <= trio.current_time() - started < 2


async def test_a_job_that_ended_before_the_wait_began_is_seen_at_once(database_url):
    job = running_job(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        store.fail(conn, job.id, "elsewhere", {"status": 502, "detail": "no"}, NOW, None)
    started = trio.current_time()
    async with opened(Database(database_url)) as database:
        ended = await wait_for_job(database, job, 30)
    assert ended.status == "failed" and trio.current_time() - started < 2


async def test_a_job_another_process_queues_starts_at_once_not_at_the_next_look(
    service, database_url
):
    """A supervising `serve`'s job worker runs the jobs its API processes queue: it hears
    each (NOTIFY at the queueing's commit) rather than finding it up to POLL_SECONDS
    later."""
    from ragio.http.problems import problem_for
    from ragio.jobs.worker import Worker

    started: list[float] = []

    async def note(running: object) -> dict[str, bool]:
        started.append(trio.current_time())
        return {"noted": True}

    worker = Worker(service, {"note": note}, problem_for)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.run)
        await trio.sleep(0.5)  # it has looked once, and listens
        for number in range(3):
            await trio.sleep(0.3 + 0.37 * number)  # anywhere between two looks
            queued_at = trio.current_time()
            with psycopg.connect(database_url, autocommit=True) as conn:  # another process
                store.enqueue(conn, "note", {"n": number}, NOW)
            with trio.fail_after(10):
                while len(started) <= number:
                    await trio.sleep(0.02)
            # a look every POLL_SECONDS (2) would start each at a random point of it
            assert started[number] - queued_at < 0.5
        worker.stop()
