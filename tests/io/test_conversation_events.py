"""The live feed (ragio.handoff.feed) and the owner's stream of it (GET
/conversations/events, docs/handoff.md), against the real database and app: events
written by other connections reach every listener once, in the order they commit, also
when two transactions commit out of id order; a listener too far behind is dropped, the
others go on; old events are deleted; the stream resumes after Last-Event-ID; and the
app stops at once with streams open."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import pytest
import trio

from ragio.handoff.feed import BUFFER, Feed, FeedEvent
from tests.io.conftest import serve_service
from tests.io.test_http_errors import assert_problem

# ---------------------------------------------------------------- shared with test_widget


def begin_conversation(conn: psycopg.Connection, channel: str, place: str | None = None) -> int:
    """A conversation on ``channel`` (at ``place``: its continuation key)."""
    now = datetime.now(UTC)
    row = conn.execute(
        """INSERT INTO conversations (channel, started_at, updated_at, continuation)
           VALUES (%s, %s, %s, %s) RETURNING id""",
        (channel, now, now, place),
    ).fetchone()
    assert row is not None
    return int(row[0])


def add_turn(
    conn: psycopg.Connection, conversation: int, author: str, text: str = "", event: bool = True
) -> tuple[int, int]:
    """A turn written by ``author`` (a person's message: ``text`` its answer; a customer's:
    its question) and, with ``event``, its event, in one transaction, as the turn pipeline
    records it; (its turn, its event id)."""
    question, answer = ("", text) if author == "person" else (text or "Hello?", "")
    outcome = {"person": "sent", "customer": "to_person"}.get(author, "answered")
    with conn.transaction():
        [turn] = conn.execute(
            """UPDATE conversations SET turn_count = turn_count + 1, updated_at = now()
                WHERE id = %s RETURNING turn_count""",
            (conversation,),
        ).fetchone() or (None,)
        conn.execute(
            """INSERT INTO conversation_turns
                   (conversation_id, turn, question, answer, outcome, author, created_at)
               VALUES (%s, %s, %s, %s, %s, %s, now())""",
            (conversation, turn, question, answer, outcome, author),
        )
        if not event:
            return int(turn), 0
        [event_id] = conn.execute(
            """INSERT INTO conversation_events (conversation_id, kind, turn)
               VALUES (%s, 'turn', %s) RETURNING id""",
            (conversation, turn),
        ).fetchone() or (None,)
    return int(turn), int(event_id)


def move_mode(conn: psycopg.Connection, conversation: int, mode: str) -> int:
    with conn.transaction():
        conn.execute("UPDATE conversations SET mode = %s WHERE id = %s", (mode, conversation))
        row = conn.execute(
            """INSERT INTO conversation_events (conversation_id, kind, mode)
               VALUES (%s, 'mode', %s) RETURNING id""",
            (conversation, mode),
        ).fetchone()
    assert row is not None
    return int(row[0])


class Stream:
    """A server-sent-events response read event by event: (id, event, data)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()

    async def next(self, timeout: float = 10) -> tuple[int, str, Any]:
        fields: dict[str, str] = {}
        with trio.fail_after(timeout):
            async for line in self.lines:
                if not line:
                    if "event" in fields:
                        return int(fields["id"]), fields["event"], json.loads(fields["data"])
                    fields = {}
                elif not line.startswith(":"):  # a comment: the heartbeat
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
        raise AssertionError("the stream ended")

    async def ended(self, timeout: float = 5) -> bool:
        with trio.fail_after(timeout):
            async for line in self.lines:
                assert not line or line.startswith(":"), f"an event after the end: {line}"
        return True


@asynccontextmanager
async def streaming(api: httpx.AsyncClient, path: str, **sent: Any) -> AsyncIterator[Stream]:
    async with api.stream("GET", path, **sent) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        yield Stream(response)


# ---------------------------------------------------------------- the feed


@pytest.fixture
def sql(database_url: str):
    """Another connection to the service's database (as another replica's)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


async def received(listening: Any, count: int) -> list[FeedEvent]:
    with trio.fail_after(10):
        return [await listening.receive() for _ in range(count)]


async def test_every_listener_gets_every_event_once_in_commit_order(
    service, nursery, sql, database_url
):
    feed = Feed(service, nursery, poll_seconds=0.02, linger_seconds=0.1)
    web = begin_conversation(sql, "web", "place-a")
    chat = begin_conversation(sql, "chat")  # the API's: not a customer's, not in the feed
    async with feed.listen() as one, feed.listen() as two:
        assert feed.running
        _, first = add_turn(sql, web, "customer", "Can I talk to a person?")
        add_turn(sql, chat, "ai")
        moved = move_mode(sql, web, "human")
        # two transactions: the earlier id commits last (and after the feed read past it)
        with psycopg.connect(database_url, autocommit=True) as late:
            late.execute("BEGIN")
            [slow] = late.execute(
                "INSERT INTO conversation_events (conversation_id, kind, mode) "
                "VALUES (%s, 'mode', 'ai') RETURNING id",
                (web,),
            ).fetchone() or (None,)
            _, fast = add_turn(sql, web, "person", "Hello, Anna here.")
            for listening in (one, two):
                got = await received(listening, 3)
                assert [e.id for e in got] == [first, moved, fast]
                assert got[0].kind == "turn" and got[0].author == "customer"
                assert got[0].channel == "web"
                assert got[1].kind == "mode" and got[1].mode == "human"
                assert got[2].author == "person" and got[2].answer == "Hello, Anna here."
                assert got[2].place == "place-a"
            assert slow < fast
            late.execute("COMMIT")
        for listening in (one, two):
            [late_event] = await received(listening, 1)
            assert (late_event.id, late_event.mode) == (slow, "ai")
        _, last = add_turn(sql, web, "customer", "Thanks!")
        for listening in (one, two):  # the next one: nothing was handed on twice
            assert [e.id for e in await received(listening, 1)] == [last]
    with trio.fail_after(5):
        while feed.running:  # nobody listens: the poller ends
            await trio.sleep(0.05)


async def test_a_listener_too_far_behind_is_dropped_and_the_others_go_on(service, nursery, sql):
    feed = Feed(service, nursery, poll_seconds=0.02)
    web = begin_conversation(sql, "telegram", "chat-7")
    async with feed.listen() as slow, feed.listen() as quick:
        ids: list[int] = []
        for _ in range(BUFFER + 20):
            ids.append(add_turn(sql, web, "customer")[1])
            if len(ids) % 50 == 0:
                assert [e.id for e in await received(quick, 50)] == ids[-50:]
        rest = len(ids) % 50
        assert [e.id for e in await received(quick, rest)] == ids[-rest:]
        got = []
        with pytest.raises(trio.EndOfChannel):  # what it held, then the end: it resumes
            while True:
                got.append((await slow.receive()).id)
        assert got == ids[:BUFFER]
    async with feed.listen(after=got[-1]) as resumed:  # from its last event on
        assert [e.id for e in await received(resumed, 20)] == ids[BUFFER:]


async def test_events_older_than_a_day_are_deleted(service, nursery, sql):
    web = begin_conversation(sql, "web", "place-b")
    sql.execute(
        "INSERT INTO conversation_events (conversation_id, at, kind, mode) "
        "VALUES (%s, now() - interval '25 hours', 'mode', 'human')",
        (web,),
    )
    _, kept = add_turn(sql, web, "customer")
    feed = Feed(service, nursery, poll_seconds=0.02)
    async with feed.listen():
        with trio.fail_after(10):
            while sql.execute("SELECT count(*) FROM conversation_events").fetchone() != (1,):
                await trio.sleep(0.02)
    assert sql.execute("SELECT id FROM conversation_events").fetchall() == [(kept,)]


# ---------------------------------------------------------------- the owner's stream


async def test_the_owner_sees_turns_and_moves_live_and_resumes_after_the_last(api, sql):
    telegram = begin_conversation(sql, "telegram", "chat-42")
    voice = begin_conversation(sql, "voice", "call-1")
    api_chat = begin_conversation(sql, "chat")
    async with streaming(api, "/conversations/events") as stream:
        _, asked = add_turn(sql, telegram, "customer", "Can I talk to a human?")
        assert await stream.next() == (
            asked,
            "turn",
            {
                "conversation_id": telegram,
                "turn": 1,
                "author": "customer",
                "channel": "telegram",
                "mode": "ai",
            },
        )
        add_turn(sql, api_chat, "ai")  # the API's conversations are not customers'
        moved = move_mode(sql, telegram, "human")
        human = {"conversation_id": telegram, "mode": "human"}
        assert await stream.next() == (moved, "mode", human)
    # while nobody listened: a person's message and a call's turn
    _, wrote = add_turn(sql, telegram, "person", "Hello from the shop")
    _, said = add_turn(sql, voice, "ai")
    resumed = {"Last-Event-ID": str(moved)}
    async with streaming(api, "/conversations/events", headers=resumed) as stream:
        got = [await stream.next(), await stream.next()]
        assert [(i, e, d["turn"], d["author"], d["mode"]) for i, e, d in got] == [
            (wrote, "turn", 2, "person", "human"),
            (said, "turn", 1, "ai", "ai"),
        ]
        _, live = add_turn(sql, telegram, "customer", "Thanks")
        assert (await stream.next())[0] == live
    async with streaming(api, "/conversations/events", params={"after": str(wrote)}) as stream:
        assert (await stream.next())[0] == said
    refused = await api.get("/conversations/events", headers={"Last-Event-ID": "soon"})
    assert assert_problem(refused, 422, "the id of an event")["field"] == "Last-Event-ID"


class TestStopping:
    @pytest.fixture
    def settings_overrides(self):
        return {"shutdown_grace_seconds": 30}

    async def test_the_app_stops_at_once_with_streams_open(self, service):
        """A stream does not end by itself: on a stop signal it ends at once, instead of
        holding the stop for the grace period, and the app's feed poller with it."""
        with trio.fail_after(10):
            async with trio.open_nursery() as serving:
                base_url, stop = await serve_service(service, serving)
                client = httpx.AsyncClient(base_url=base_url, timeout=30)
                async with client, streaming(client, "/conversations/events") as stream:
                    service.stopping.set()  # as a SIGTERM does (ragio.server)
                    stop.set()
                    assert await stream.ended()
