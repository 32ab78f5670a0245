"""The psycopg connection pool, used from Trio.

psycopg's async API needs asyncio, so the sync pool runs in worker threads
(``trio.to_thread.run_sync``) behind a CapacityLimiter the size of the pool:
a Trio task waits for a connection without blocking the event loop.

A thread in the driver cannot be interrupted, so the health check (``reachable``)
gives its ping up after HEALTH_WAIT_SECONDS and leaves the thread behind
(``abandon_on_cancel``); a limiter of its own keeps at most one such ping in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import trio
from psycopg_pool import ConnectionPool

T = TypeVar("T")
CONNECT_TIMEOUT_SECONDS = 10
STATEMENT_TIMEOUT_MS = 30_000
#: how long /health waits for the database (a pool connection, then SELECT 1) before it
#: says "degraded"; the docs promise an answer within 3 s
HEALTH_WAIT_SECONDS = 2.5


class DatabaseUnreachable(RuntimeError):
    """The database refused or did not answer; the message is the server's reason."""


class Database:
    def __init__(self, url: str, max_connections: int = 8, embedded: bool = False):
        self.embedded = embedded
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            open=False,
            timeout=CONNECT_TIMEOUT_SECONDS,
            kwargs={
                "autocommit": True,
                "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            },
        )
        self.limiter = trio.CapacityLimiter(max_connections)
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
        """Run ``work(connection, *args)`` in a worker thread with a pooled connection."""

        def in_thread() -> T:
            with self.pool.connection() as conn:
                return work(conn, *args)

        return await trio.to_thread.run_sync(in_thread, limiter=self.limiter)

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
