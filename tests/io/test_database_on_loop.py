"""Database work on the event loop (ragio.db.greenlets): sync psycopg code, run where the
loop can go on while it waits for the server, and in a worker thread when the pool has no
connection ready."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
import trio

from ragio.db.pool import WORK_ON_LOOP, Database, in_thread


@pytest.fixture
async def database(database_url):
    db = Database(database_url, max_connections=2)
    await db.open()
    try:
        yield db
    finally:
        await db.close()


async def ticks_while(work) -> tuple[object, int]:
    """``work()``'s result, and how often another task got the loop meanwhile (every 10 ms)."""
    ticks = 0
    result = None

    async def tick() -> None:
        nonlocal ticks
        while True:
            await trio.sleep(0.01)
            ticks += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        result = await work()
        nursery.cancel_scope.cancel()
    return result, ticks


async def test_work_runs_on_the_loop_and_the_loop_goes_on_while_the_server_works(database):
    def slow(conn: psycopg.Connection) -> tuple[int, object]:
        row = conn.execute("SELECT pg_sleep(0.3), 42").fetchone()
        return threading.get_ident(), row[1] if row else None

    (thread, answer), ticks = await ticks_while(lambda: database.run(slow))
    assert answer == 42
    assert thread == threading.get_ident()  # no worker thread
    assert ticks >= 15  # the loop was not held for the 300 ms


async def test_with_no_connection_ready_the_work_waits_for_one_in_a_thread(database):
    held = [await trio.to_thread.run_sync(database.pool.getconn) for _ in range(2)]

    async def give_back() -> None:
        await trio.sleep(0.3)
        for conn in held:
            database.pool.putconn(conn)

    def which(conn: psycopg.Connection) -> tuple[int, object]:
        row = conn.execute("SELECT 7").fetchone()
        return threading.get_ident(), row[0] if row else None

    async with trio.open_nursery() as nursery:
        nursery.start_soon(give_back)
        started = time.monotonic()
        (thread, answer), ticks = await ticks_while(lambda: database.run(which))
    assert answer == 7
    assert thread != threading.get_ident()
    assert time.monotonic() - started >= 0.25  # it waited for a connection ...
    assert ticks >= 15  # ... without holding the loop


async def test_many_rows_in_pipeline_mode_and_copy(database):
    """executemany runs in psycopg's pipeline mode, which waits to read or write at once."""

    def fill(conn: psycopg.Connection) -> tuple[int, int]:
        with conn.transaction():
            conn.execute("CREATE TEMP TABLE numbers (n int PRIMARY KEY, word text)")
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO numbers VALUES (%s, %s)", [(n, "x" * 200) for n in range(3000)]
                )
                with cur.copy("COPY numbers (n, word) FROM STDIN") as copy:
                    for n in range(3000, 6000):
                        copy.write_row((n, "y" * 200))
            row = conn.execute("SELECT count(*), sum(n) FROM numbers").fetchone()
            conn.execute("DROP TABLE numbers")
        assert row is not None
        return int(row[0]), int(row[1])

    assert await database.run(fill) == (6000, sum(range(6000)))


async def test_a_failed_statement_is_raised_and_its_connection_comes_back_clean(database):
    def fail(conn: psycopg.Connection) -> None:
        with conn.transaction():
            conn.execute("SELECT 1/0")

    for _ in range(3):  # more than the pool's two connections: each came back
        with pytest.raises(psycopg.errors.DivisionByZero):
            await database.run(fail)

    def status(conn: psycopg.Connection) -> object:
        row = conn.execute("SELECT 1").fetchone()
        return conn.info.transaction_status, row

    state, row = await database.run(status)
    assert row == (1,)
    assert state == psycopg.pq.TransactionStatus.IDLE


async def test_a_cancelled_caller_lets_the_query_finish_and_the_connection_is_kept(database):
    def slow(conn: psycopg.Connection) -> object:
        return conn.execute("SELECT pg_sleep(0.3), 1").fetchone()

    started = time.monotonic()
    with trio.move_on_after(0.05):
        await database.run(slow)
    assert time.monotonic() - started >= 0.25  # not abandoned halfway
    for _ in range(3):
        assert await database.run(lambda conn: conn.execute("SELECT 2").fetchone()) == (2,)


async def test_a_worker_thread_uses_the_same_connections_as_psycopg_does(database):
    """Outside the loop's greenlets a connection waits as psycopg's own do."""

    def in_thread() -> object:
        with database.pool.connection() as conn:
            return conn.execute("SELECT pg_sleep(0.05), 3").fetchone()

    assert await trio.to_thread.run_sync(in_thread) == ("", 3)


async def test_tasks_that_turn_the_loop_off_work_in_threads_and_others_do_not(database):
    """The voice server's tasks keep their database work in threads (voiceio.server)."""
    where: dict[str, int] = {}

    def which(conn: psycopg.Connection) -> int:
        conn.execute("SELECT 1")
        return threading.get_ident()

    async def voice() -> None:
        WORK_ON_LOOP.set(False)
        where["voice"] = await database.run(which)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(voice)
    where["api"] = await database.run(which)
    assert where["voice"] != threading.get_ident()
    assert where["api"] == threading.get_ident()


async def test_bulk_work_marked_in_thread_runs_in_a_worker_thread(database):
    """Bulk writes (a document's chunks and vectors) leave the loop its turns."""

    @in_thread
    def bulk(conn: psycopg.Connection) -> int:
        conn.execute("SELECT 1")
        return threading.get_ident()

    assert await database.run(bulk) != threading.get_ident()
