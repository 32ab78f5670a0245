"""psycopg's sync API on Trio's event loop, without a worker thread.

The service's database work is plain sync psycopg (``work(connection, …)``). Run in a
worker thread (``trio.to_thread``), each call cost ~100 µs of CPU for the hop alone, and
under load the thread, wanting the GIL back after each socket call, waited behind the busy
event loop: a search took 19 ms at the median on the voice server with 20 calls. Here the
work runs in a greenlet on the event loop's thread instead. Where psycopg would block on
its socket (``Connection.wait``, which every query, transaction and COPY goes through),
the greenlet switches back to its Trio task, which awaits the socket and switches in again
with what is ready: the same code and connection, no thread.

Outside such a greenlet (a worker thread, the pool's own threads) a ``LoopConnection``
waits as psycopg does.
"""

from __future__ import annotations

import contextvars
import math
import select
import time
from collections.abc import Callable
from typing import Any, TypeVar

import greenlet
import psycopg
import trio
from psycopg import errors
from psycopg.waiting import Ready, Wait

T = TypeVar("T")


class _Work(greenlet.greenlet):
    """A greenlet running database work for the Trio task that switched into it."""


class LoopConnection(psycopg.Connection[Any]):
    """A connection whose waits, in ``run_on_loop``'s greenlet, are its Trio task's."""

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        here = greenlet.getcurrent()
        if not isinstance(here, _Work):
            return super().wait(gen, interval, timeout)
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        fileno = self.pgconn.socket
        try:
            state = next(gen)
            while True:
                ready = here.parent.switch((fileno, state, deadline))
                if ready is None:
                    raise errors._WaitTimeout()  # as psycopg's own wait: its callers catch it
                state = gen.send(ready)
        except StopIteration as done:
            return done.value


async def run_on_loop(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in a greenlet, its database waits awaited here. Not cancellable
    once started, as a worker thread was not: a query under way is not abandoned halfway
    (the statement timeout bounds it)."""
    work = _Work(function)
    work.gr_context = contextvars.copy_context()
    request = work.switch(*args)
    with trio.CancelScope(shield=True):
        while not work.dead:
            fileno, state, deadline = request
            request = work.switch(await _ready(fileno, state, deadline))
    return request


async def _ready(fileno: int, state: Wait, deadline: float) -> Ready | None:
    """What the socket is ready for, once it is ready for some of ``state``; None when the
    deadline (``time.monotonic``) passes first."""
    if deadline == math.inf:  # every query's wait: no cancel scope to make
        return await _wait_for(fileno, state)
    with trio.move_on_after(deadline - time.monotonic()):
        return await _wait_for(fileno, state)
    return None


async def _wait_for(fileno: int, state: Wait) -> Ready:
    if state == Wait.R:
        await trio.lowlevel.wait_readable(fileno)
        return Ready.R
    if state == Wait.W:
        await trio.lowlevel.wait_writable(fileno)
        return Ready.W
    return await _read_or_write(fileno)


async def _read_or_write(fileno: int) -> Ready:
    """Ready for reading, writing or both (psycopg's pipeline mode waits for either)."""
    poller = select.poll()  # not select.select: it refuses descriptors above 1023
    poller.register(fileno, select.POLLIN | select.POLLOUT)
    while not (events := poller.poll(0)):
        async with trio.open_nursery() as nursery:

            async def first(wait: Callable[[int], Any]) -> None:
                await wait(fileno)
                nursery.cancel_scope.cancel()

            nursery.start_soon(first, trio.lowlevel.wait_readable)
            nursery.start_soon(first, trio.lowlevel.wait_writable)
    [(_, flags)] = events
    if flags & (select.POLLERR | select.POLLHUP):
        return Ready.RW  # psycopg reads the error
    readable = Ready.R if flags & select.POLLIN else Ready.NONE
    return Ready(readable | (Ready.W if flags & select.POLLOUT else Ready.NONE))
