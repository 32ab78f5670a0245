"""The connections to the owner's databases kept open between live queries: a few per data
source, so a live query need not connect (most of its time) each time.

- Per source, at most ``PER_SOURCE`` idle connections are kept; a burst of more queries
  at once opens more, and what is over the bound is closed when given back.
- A kept connection idle for ``IDLE_SECONDS`` is closed (``close_idle``: on every use,
  and every ``SWEEP_SECONDS`` by ``keep_sweeping`` beside the server).
- A source edited or deleted (``drop``) has its connections closed at once, and one in
  use then is closed when given back: a changed password or host takes effect on the
  next query, and nothing stays connected to a removed source. Each lease carries the
  source's version (its ``updated_at``): a newer version seen (another process edited
  it) drops the older connections too; a lease of an older version keeps nothing.
- The service closes them all on the way out (``close``).

Driver-agnostic: a connection is anything with ``close()``; the connector decides
whether one given back may be used again and checks one taken before its statement
(``ragio.integrations.connectors.databases``). Thread-safe: the drivers run in worker
threads, which take, give back and close here (closing is I/O: never on the Trio loop).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

#: idle connections kept per data source
PER_SOURCE = 3
#: a kept connection unused this long is closed
IDLE_SECONDS = 60.0
#: how often ``keep_sweeping`` closes the idle ones
SWEEP_SECONDS = 15.0


@attrs.define(eq=False)
class _Slot:
    version: Any
    idle: list[tuple[float, Any]] = attrs.field(factory=list)  # (given back at, connection)
    dropped: bool = False


@attrs.frozen
class Statistics:
    sources: int  # sources with a connection kept
    idle: int  # connections kept, idle
    kept: int  # connections given back and kept, ever
    reused: int  # connections taken again, ever


class SourceConnections:
    """Every data source's kept connections (see the module)."""

    def __init__(
        self,
        per_source: int = PER_SOURCE,
        idle_seconds: float = IDLE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_source = per_source
        self.idle_seconds = idle_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._slots: dict[int, _Slot] = {}
        self._closed = False
        self._kept = 0
        self._reused = 0

    def lease(self, source_id: int, version: Any) -> Lease:
        """What one query of source ``source_id`` (at ``version``) takes and gives back."""
        return Lease(self, source_id, version)

    def drop(self, source_id: int) -> None:
        """Source ``source_id`` was edited or deleted: close its connections (one in use
        is closed when given back). Blocking: from a worker thread."""
        with self._lock:
            slot = self._slots.pop(source_id, None)
            if slot is not None:
                slot.dropped = True
                stale, slot.idle = slot.idle, []
        if slot is not None:
            _close_all(conn for _, conn in stale)

    def close_idle(self) -> int:
        """Close every connection idle for ``idle_seconds``; how many. Blocking."""
        stale: list[Any] = []
        limit = self._monotonic() - self.idle_seconds
        with self._lock:
            # an emptied slot stays: it remembers the source's version (a lease read
            # before an edit must not keep a connection with the old credentials)
            for slot in self._slots.values():
                stale += [conn for since, conn in slot.idle if since <= limit]
                slot.idle = [(since, conn) for since, conn in slot.idle if since > limit]
        _close_all(stale)
        return len(stale)

    def close(self) -> None:
        """Close everything; nothing is kept from now on. Blocking."""
        with self._lock:
            self._closed = True
            slots, self._slots = list(self._slots.values()), {}
            for slot in slots:
                slot.dropped = True
        _close_all(conn for slot in slots for _, conn in slot.idle)

    def statistics(self) -> Statistics:
        with self._lock:
            idle = [len(slot.idle) for slot in self._slots.values() if slot.idle]
            return Statistics(len(idle), sum(idle), self._kept, self._reused)

    def _take(self, lease: Lease) -> Any | None:
        self.close_idle()
        stale: list[Any] = []
        try:
            with self._lock:
                if self._closed:
                    return None
                slot = self._slots.get(lease.source_id)
                if slot is not None and slot.version != lease.version:
                    if _older(lease.version, slot.version):
                        return None  # read before an edit: its connection is not kept
                    stale = [conn for _, conn in slot.idle]  # the source was edited
                    slot.dropped, slot.idle, slot = True, [], None
                if slot is None:
                    slot = self._slots[lease.source_id] = _Slot(lease.version)
                lease.slot = slot
                if not slot.idle:
                    return None
                self._reused += 1
                return slot.idle.pop()[1]  # the most recently used: the likeliest alive
        finally:
            _close_all(stale)

    def _give(self, lease: Lease, conn: Any) -> None:
        slot = lease.slot
        with self._lock:
            keep = (
                slot is not None
                and not slot.dropped  # the source edited or deleted meanwhile
                and not self._closed
                and len(slot.idle) < self.per_source
            )
            if keep:
                assert slot is not None
                slot.idle.append((self._monotonic(), conn))
                self._kept += 1
        if not keep:
            _close_all([conn])


@attrs.define(eq=False)
class Lease:
    """One query's use of a source's kept connections: ``take`` one (None: open one),
    then ``give`` back one that may be used again. Both blocking: from the worker
    thread."""

    pool: SourceConnections
    source_id: int
    version: Any
    slot: _Slot | None = None

    def take(self) -> Any | None:
        return self.pool._take(self)

    def give(self, conn: Any) -> None:
        self.pool._give(self, conn)


def _older(version: Any, than: Any) -> bool:
    try:
        return bool(version < than)
    except TypeError:
        return False


def _close_all(connections: Any) -> None:
    for conn in connections:
        with contextlib.suppress(Exception):  # already closed, or the server gone
            conn.close()


async def keep_sweeping(connections: SourceConnections, stopping: trio.Event) -> None:
    """Close the idle connections every ``SWEEP_SECONDS`` until ``stopping`` is set."""
    while not stopping.is_set():
        with trio.move_on_after(SWEEP_SECONDS):
            await stopping.wait()
        await trio.to_thread.run_sync(connections.close_idle)
