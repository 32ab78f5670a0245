"""The psycopg connection pool, used from Trio.

psycopg's async API needs asyncio, so the work is sync psycopg behind a CapacityLimiter
the size of the pool, the connections held and the tasks waiting kept in two gauges as they
change (``ragio.metrics.Occupancy``). With a connection free in the pool, the work runs on
the event loop, its socket waits awaited (``ragio.db.greenlets``); when the pool has none
ready, the wait for one (and the work) goes to a worker thread, so that the event loop
never waits for a connection. The tasks of a loop that carries calls' media (the voice
server's) set ``WORK_ON_LOOP`` off: there each round trip awaited on the busy loop cost
more than a thread's hop (``voiceio.server``).

A thread in the driver cannot be interrupted, so the health check (``reachable``)
gives its ping up after HEALTH_WAIT_SECONDS and leaves the thread behind
(``abandon_on_cancel``); a limiter of its own keeps at most one such ping in flight.

When the database stops or restarts, the service carries on by itself: a request that
cannot get a connection gives up after CHECKOUT_TIMEOUT_SECONDS, and the next ones, until
one gets a connection, after DOWN_CHECKOUT_SECONDS (the HTTP API answers 503,
``ragio.http.problems``); the pool gives a failing reconnection up after
RECONNECT_TIMEOUT_SECONDS, and the next request starts a new one at once (psycopg_pool's
own retries double their wait each time, so the service came back up to minutes after
the database); and no connection the server closed meanwhile is handed to a request
(``hand_out_open``).
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg
import trio
from psycopg_pool import ConnectionPool, PoolTimeout

from ragio import metrics
from ragio.db.greenlets import LoopConnection, run_on_loop

T = TypeVar("T")
W = TypeVar("W", bound=Callable[..., Any])
CONNECT_TIMEOUT_SECONDS = 10
#: how long a request waits for a pool connection: with the database up one is free at
#: once (the limiter lets no more requests in than there are connections), or connects in
#: milliseconds; longer means the database is down, and the request fails with a 503
CHECKOUT_TIMEOUT_SECONDS = 5
#: the same once a request found no connection in time, until one does: while the database
#: is down a request fails at once instead of after 5 s (a /chat, which also records its
#: failed turn, after 10 s), and still gets a connection the pool makes meanwhile
DOWN_CHECKOUT_SECONDS = 0.5
#: how long the pool retries a lost connection before it gives up; the next request then
#: starts a new attempt at once (its retries wait 1, 2, 4 … s: after a 20 s stop the
#: service answered 7 s after the database with psycopg_pool's 5 minutes, 0.04 s with 2 s)
RECONNECT_TIMEOUT_SECONDS = 2
STATEMENT_TIMEOUT_MS = 30_000
#: how long /health waits for the database (a pool connection, then SELECT 1) before it
#: says "degraded"; the docs promise an answer within 3 s
HEALTH_WAIT_SECONDS = 2.5
#: how long a checkout on the event loop waits for a pool connection before the wait goes
#: to a worker thread: a connection free in the pool is handed over without waiting
LOOP_CHECKOUT_SECONDS = 0.001


#: whether the current task's database work runs on the event loop when a connection is
#: ready (else in a worker thread); tasks inherit it from the task that started them
WORK_ON_LOOP: ContextVar[bool] = ContextVar("WORK_ON_LOOP", default=True)


def in_thread(work: W) -> W:
    """Mark bulk database work (many rows, their vectors packed in Python): it runs in a
    worker thread, where the event loop still gets its turns at the GIL's switch interval,
    rather than holding the loop until its next wait for the server."""
    work.in_thread = True  # type: ignore[attr-defined]
    return work


class _NoneReady(Exception):
    """The pool had no connection ready for a checkout on the event loop."""


def hand_out_open(conn: psycopg.Connection) -> None:
    """Raise for a connection the server has closed (a restart, an administrator ending
    sessions), so the pool drops it and hands out another instead of failing a request.

    An idle connection has nothing to read; a closed one has the server's last words or
    the end of the stream. Only then is the server asked (a round trip), so a connection
    that is fine costs one non-blocking ``poll``, not the round trip of psycopg's own
    ``check_connection`` (measured here: 75-200 µs more a checkout)."""
    poller = select.poll()  # not select.select: it refuses descriptors above 1023
    poller.register(conn.fileno(), select.POLLIN)
    if poller.poll(0):
        ConnectionPool.check_connection(conn)


class DatabaseUnreachable(RuntimeError):
    """The database refused or did not answer; the message is the server's reason."""


class Database:
    def __init__(self, url: str, max_connections: int = 8, embedded: bool = False):
        self.embedded = embedded
        self.url = url  # where the service's own database is: never a data source
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            open=False,
            timeout=CHECKOUT_TIMEOUT_SECONDS,
            reconnect_timeout=RECONNECT_TIMEOUT_SECONDS,
            check=hand_out_open,
            connection_class=LoopConnection,
            kwargs={
                "autocommit": True,
                "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            },
        )
        self.limiter = trio.CapacityLimiter(max_connections)
        self._occupancy = metrics.Occupancy(
            self.limiter, metrics.DATABASE_CONNECTIONS, metrics.DATABASE_WAITING
        )
        #: the last request found no connection in time (DOWN_CHECKOUT_SECONDS)
        self.down = False
        # one ping in flight at most: a ping stuck in a database that answers nothing holds
        # it until the database answers, and the checks meanwhile wait HEALTH_WAIT_SECONDS
        # for it, then say no (instead of leaving one more stuck thread each)
        self.ping_limiter = trio.CapacityLimiter(1)

    async def open(self) -> None:
        """Open the pool; DatabaseUnreachable (with the server's reason) when it cannot connect."""
        await trio.to_thread.run_sync(self._open)

    def _open(self) -> None:
        # One direct attempt first: the pool would retry quietly until its timeout, while
        # the first failure already says why (refused, unknown host, bad password, …).
        try:
            psycopg.connect(self.pool.conninfo, connect_timeout=CONNECT_TIMEOUT_SECONDS).close()
        except psycopg.OperationalError as error:
            raise DatabaseUnreachable(str(error).strip()) from None
        self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)

    async def close(self) -> None:
        await trio.to_thread.run_sync(self.pool.close)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """Run ``work(connection, *args)`` with a pooled connection: on the event loop when
        the pool has one ready, else (or for ``in_thread`` work) in a worker thread."""
        async with self._occupancy:
            if WORK_ON_LOOP.get() and not getattr(work, "in_thread", False):
                try:
                    return await run_on_loop(self._with_ready_connection, work, args)
                except _NoneReady:
                    pass
            return await trio.to_thread.run_sync(self._with_connection, work, args)

    def _with_ready_connection(self, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            conn = self.pool.getconn(timeout=LOOP_CHECKOUT_SECONDS)
        except PoolTimeout:
            raise _NoneReady() from None
        try:
            self.down = False
            return work(conn, *args)
        finally:
            self.pool.putconn(conn)

    def _with_connection(self, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        wait = DOWN_CHECKOUT_SECONDS if self.down else CHECKOUT_TIMEOUT_SECONDS
        try:
            with self.pool.connection(timeout=wait) as conn:
                self.down = False
                return work(conn, *args)
        except PoolTimeout:
            self.down = True
            raise

    async def reachable(self, wait: float = HEALTH_WAIT_SECONDS) -> bool:
        """Whether the database answers ``SELECT 1`` within ``wait`` seconds, taking a
        connection from the pool included: False too when every connection is held by
        requests stuck on the database. Never waits longer than ``wait``."""
        deadline = time.monotonic() + wait

        def ping() -> bool:
            # the checkout gives up in time by itself; the query cannot be interrupted,
            # so a ping stuck in it is abandoned below and ends when the database answers
            with self.pool.connection(timeout=max(0.01, deadline - time.monotonic())) as conn:
                return conn.execute("SELECT 1").fetchone() == (1,)

        with trio.move_on_after(wait):
            try:
                return await trio.to_thread.run_sync(
                    ping, limiter=self.ping_limiter, abandon_on_cancel=True
                )
            except (psycopg.Error, OSError):  # PoolTimeout is a psycopg.OperationalError
                return False
        return False
