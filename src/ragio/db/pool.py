"""The psycopg connection pool, used from Trio.

psycopg's async API needs asyncio, so the sync pool runs in worker threads
(``trio.to_thread.run_sync``) behind a CapacityLimiter the size of the pool:
a Trio task waits for a connection without blocking the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import trio
from psycopg_pool import ConnectionPool

T = TypeVar("T")
CONNECT_TIMEOUT_SECONDS = 10
STATEMENT_TIMEOUT_MS = 30_000


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

    async def reachable(self) -> bool:
        def ping(conn: psycopg.Connection) -> bool:
            return conn.execute("SELECT 1").fetchone() == (1,)

        try:
            with trio.fail_after(3):
                return await self.run(ping)
        except (psycopg.Error, trio.TooSlowError, OSError):
            return False
