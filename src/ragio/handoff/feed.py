"""The live feed (docs/handoff.md): what happens in customers' conversations, for the
views that show it as it happens (the console's inbox: ``GET /conversations/events``;
the widget: ``GET /widget/events``).

Every turn recorded in a conversation on a customer channel, and every move of its mode,
is a row of ``conversation_events``, written in the same transaction. ONE poller per
process reads the table by id every ``POLL_SECONDS`` while anyone listens, and hands each
event to every listener of the process: so a message recorded through any replica
reaches the listeners of every replica. A listener is a bounded memory channel; one that
falls ``BUFFER`` events behind is dropped (its stream ends; the client resumes from its
last event id) rather than holding the others up.

Ids come from a sequence, taken when a row is written and seen when its transaction
commits: two transactions can commit out of id order, so an id skipped over is looked
for again (``id = ANY(missing)``) for ``GAP_SECONDS``; none is missed and none is handed
on twice. Rows older than ``KEEP`` are deleted every ``PURGE_SECONDS``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
import trio

from ragcore.handoff.modes import HANDOFF_CHANNELS
from ragio.service import Service

log = logging.getLogger(__name__)

#: the channels whose conversations a person can take over: the feed's
FEED_CHANNELS = HANDOFF_CHANNELS
POLL_SECONDS = 0.5
#: events a listener may be behind before it is dropped
BUFFER = 256
#: how long an id skipped over (its transaction not yet committed) is looked for
GAP_SECONDS = 60.0
#: ids looked for at most at once (the oldest are given up beyond)
MAX_MISSING = 2048
#: at the poller's start, the ids behind the highest that may still commit
WINDOW = 256
#: rows read at most at once (the rest at once after)
PAGE = 500
#: how long the poller goes on after its last listener left (a client reconnecting)
LINGER_SECONDS = 5.0
KEEP = timedelta(days=1)
PURGE_SECONDS = 600.0


@attrs.frozen
class FeedEvent:
    """One event, with what its listeners need of its conversation."""

    id: int
    conversation_id: int
    kind: str  # turn | mode
    channel: str
    mode: str  # kind mode: the new mode; kind turn: the conversation's, as the turn left it
    turn: int | None = None
    author: str | None = None  # the turn's: ai, customer or person
    answer: str | None = None  # a person's message (author person), else None
    place: str | None = None  # the conversation's place key (a widget visitor's)


_SELECT = """
SELECT e.id, e.conversation_id, e.kind, c.channel, COALESCE(e.mode, c.mode), e.turn,
       t.author, CASE WHEN t.author = 'person' THEN t.answer END, c.continuation
  FROM conversation_events e
  JOIN conversations c ON c.id = e.conversation_id
  LEFT JOIN conversation_turns t
         ON e.kind = 'turn' AND t.conversation_id = e.conversation_id AND t.turn = e.turn
"""


def _events(rows: list[tuple[Any, ...]]) -> list[FeedEvent]:
    return [FeedEvent(*row) for row in rows]


def latest(conn: psycopg.Connection, window: int) -> tuple[int, set[int]]:
    """The highest event id (0: none), and which ids of the ``window`` below it exist."""
    row = conn.execute("SELECT COALESCE(max(id), 0) FROM conversation_events").fetchone()
    highest = int(row[0]) if row is not None else 0
    rows = conn.execute(
        "SELECT id FROM conversation_events WHERE id > %s", (highest - window,)
    ).fetchall()
    return highest, {int(row[0]) for row in rows}


def read_new(
    conn: psycopg.Connection, after: int, missing: list[int], limit: int
) -> list[FeedEvent]:
    """The events past ``after`` and those of ``missing`` committed since, by id."""
    rows = conn.execute(
        f"{_SELECT} WHERE e.id > %s OR e.id = ANY(%s) ORDER BY e.id LIMIT %s",
        (after, missing, limit),
    ).fetchall()
    return _events(rows)


def read_since(
    conn: psycopg.Connection, after: int, place: str | None, limit: int
) -> list[FeedEvent]:
    """The events past ``after`` on the feed's channels (at ``place`` only, if given)."""
    rows = conn.execute(
        f"""{_SELECT} WHERE e.id > %s AND c.channel = ANY(%s)
                        AND (%s::text IS NULL OR c.continuation = %s)
             ORDER BY e.id LIMIT %s""",
        (after, list(FEED_CHANNELS), place, place, limit),
    ).fetchall()
    return _events(rows)


def purge(conn: psycopg.Connection, before: datetime) -> int:
    """Delete the events older than ``before``; how many."""
    return conn.execute("DELETE FROM conversation_events WHERE at < %s", (before,)).rowcount


class Listening:
    """What one listener receives: the events it missed (after the id it resumes from),
    then the events as they come; ``receive`` raises ``trio.EndOfChannel`` when the
    feed stops or dropped it (it fell too far behind)."""

    def __init__(
        self, channel: trio.MemoryReceiveChannel[FeedEvent], missed: list[FeedEvent]
    ) -> None:
        self._channel = channel
        self._missed = missed[::-1]
        self._handed = {event.id for event in missed}

    def take_missed(self) -> FeedEvent | None:
        """The next missed event, if any is left (without waiting)."""
        return self._missed.pop() if self._missed else None

    async def receive(self) -> FeedEvent:
        if self._missed:
            await trio.lowlevel.checkpoint()
            return self._missed.pop()
        while True:
            event = await self._channel.receive()
            if event.id not in self._handed:
                return event


class Feed:
    """The process's one poller of ``conversation_events`` and its listeners. The poller
    runs in ``nursery`` (the app's) from the first listener until ``LINGER_SECONDS``
    after the last; ``stop`` (or the service's ``stopping``) ends it and every
    listener's events."""

    def __init__(
        self,
        service: Service,
        nursery: trio.Nursery,
        poll_seconds: float = POLL_SECONDS,
        linger_seconds: float = LINGER_SECONDS,
    ) -> None:
        self.service = service
        self.nursery = nursery
        self.poll_seconds = poll_seconds
        self.linger_seconds = linger_seconds
        self._listeners: set[_Listener] = set()
        self._starting = trio.Lock()
        self._running = False
        self._stopped = False
        self._scope = trio.CancelScope()
        self._highest = 0
        self._missing: dict[int, float] = {}  # id: when it was first skipped over
        self._purge_at = 0.0
        self._failing = False

    @property
    def running(self) -> bool:
        """Whether the poller runs (for tests)."""
        return self._running

    @asynccontextmanager
    async def listen(
        self, after: int | None = None, place: str | None = None
    ) -> AsyncIterator[Listening]:
        """Listen to the feed (at ``place`` only, when given: a widget visitor's
        conversations), resuming after the event ``after`` when given. The poller is
        started first, so that nothing between the missed events and the new is lost."""
        send, receive = trio.open_memory_channel[FeedEvent](BUFFER)
        inner: _Listener = send if place is None else _AtPlace(send, place)
        try:
            if self._stopped or self.service.stopping.is_set():
                send.close()
                yield Listening(receive, [])
                return
            self._listeners.add(inner)
            await self._start()
            missed: list[FeedEvent] = []
            if after is not None:
                while True:  # every page: the listener's channel holds what comes meanwhile
                    page = await self.service.database.run(read_since, after, place, PAGE)
                    missed += page
                    if len(page) < PAGE:
                        break
                    after = page[-1].id
            yield Listening(receive, missed)
        finally:
            self._listeners.discard(inner)
            send.close()
            receive.close()

    async def position(self) -> int:
        """Where a listener from now on resumes (``listen(after=…)``): the poller is
        started, and the id before every event not yet handed on (those whose
        transactions may still commit included), so that what commits before the listener
        begins is not lost."""
        await self._start()
        return min(self._missing, default=self._highest + 1) - 1

    async def _start(self) -> None:
        async with self._starting:  # one listener starts it; the others wait for that
            if self._running:
                return
            highest, present = await self.service.database.run(latest, WINDOW)
            now = trio.current_time()
            self._highest = highest
            below = range(max(1, highest - WINDOW + 1), highest)
            self._missing = {id_: now for id_ in below if id_ not in present}
            self._scope = trio.CancelScope()
            self._running = True
            self.nursery.start_soon(self._run)

    def stop(self) -> None:
        """End the poller and every listener's events (the app stops)."""
        self._stopped = True
        self._scope.cancel()
        self._end_listeners()

    async def _run(self) -> None:
        idle_since: float | None = None
        try:
            with self._scope:
                while not self.service.stopping.is_set():
                    now = trio.current_time()
                    if self._listeners:
                        idle_since = None
                    elif idle_since is None:
                        idle_since = now
                    elif now - idle_since >= self.linger_seconds:
                        return
                    if now >= self._purge_at:
                        self._purge_at = now + PURGE_SECONDS
                        await self._purge()
                    found = await self._poll()
                    if found < PAGE:
                        with trio.move_on_after(self.poll_seconds):
                            await self.service.stopping.wait()
                self._end_listeners()
        finally:
            self._running = False

    async def _poll(self) -> int:
        """Read what is new and hand it on; how many were read."""
        missing = sorted(self._missing)
        try:
            found = await self.service.database.run(read_new, self._highest, missing, PAGE)
        except Exception:  # noqa: BLE001 (the database is down: the next poll tries)
            if not self._failing:
                log.warning("the live feed could not read conversation_events", exc_info=True)
            self._failing = True
            return 0
        if self._failing:
            log.info("the live feed reads conversation_events again")
        self._failing = False
        now = trio.current_time()
        for event in found:
            if self._missing.pop(event.id, None) is None:
                if event.id <= self._highest:
                    continue  # seen already (cannot be: read by id)
                for skipped in range(max(self._highest + 1, event.id - MAX_MISSING), event.id):
                    self._missing[skipped] = now
                self._highest = event.id
            self._hand_on(event)
        given_up = [id_ for id_, since in self._missing.items() if now - since > GAP_SECONDS]
        for id_ in given_up:
            del self._missing[id_]
        for id_ in sorted(self._missing)[:-MAX_MISSING]:
            del self._missing[id_]
        return len(found)

    def _hand_on(self, event: FeedEvent) -> None:
        if event.channel not in FEED_CHANNELS:
            return
        for listener in list(self._listeners):
            try:
                listener.send_nowait(event)
            except trio.WouldBlock:  # too far behind: dropped, it resumes from its last id
                log.info("a live feed listener fell %d events behind and was dropped", BUFFER)
                self._listeners.discard(listener)
                listener.close()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._listeners.discard(listener)

    async def _purge(self) -> None:
        try:
            gone = await self.service.database.run(purge, self.service.clock.now() - KEEP)
        except Exception:  # noqa: BLE001 (the next purge tries)
            log.warning("could not delete old conversation_events", exc_info=True)
            return
        if gone:
            log.info("deleted %d conversation events older than %s", gone, KEEP)

    def _end_listeners(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()


@attrs.define(eq=False)
class _AtPlace:
    """A listener to the events at one place only (a widget visitor's): the others are
    never put in its channel."""

    channel: trio.MemorySendChannel[FeedEvent]
    place: str

    def send_nowait(self, event: FeedEvent) -> None:
        if event.place == self.place:
            self.channel.send_nowait(event)

    def close(self) -> None:
        self.channel.close()


_Listener = trio.MemorySendChannel[FeedEvent] | _AtPlace
