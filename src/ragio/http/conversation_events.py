"""GET /conversations/events: the owner's live view of customers' conversations, as
server-sent events (the console's inbox: docs/handoff.md). The events come from the
process's one live feed (``ragio.handoff.feed``), which this module starts in the app's
nursery with its first listener and stops with the app."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable

import trio
from quart import Blueprint, Response, current_app, request

from ragcore.api.conversation_events import (
    HEARTBEAT,
    EventsQuery,
    conversation_event_stream,
    resumed_after,
    sse_event,
    waited,
)
from ragcore.api.operations import Reply, operation
from ragio.handoff.feed import Feed, FeedEvent
from ragio.http.context import service

blueprint = Blueprint("conversation_events", __name__)
FEED = "ragchat.handoff.feed"
#: a comment line this often while nothing happens: proxies keep the connection open
HEARTBEAT_SECONDS = 15.0
LAST_EVENT_ID = {"Last-Event-ID": "resume after this event id (what EventSource sends)"}
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def feed() -> Feed:
    """The app's live feed, made on first use; its poller runs in the app's nursery."""
    if FEED not in current_app.extensions:
        nursery = current_app.nursery  # type: ignore[attr-defined]
        current_app.extensions[FEED] = Feed(service(), nursery)
    made: Feed = current_app.extensions[FEED]
    return made


@blueprint.after_app_serving
async def stop_feed() -> None:
    """The poller would hold the app's nursery open: it ends, and every stream with it."""
    made: Feed | None = current_app.extensions.get(FEED)
    if made is not None:
        made.stop()


def resume_point() -> int | None:
    """Where the client resumes: ``Last-Event-ID``, else ``?after=``."""
    return resumed_after(request.headers.get("Last-Event-ID"), request.args.get("after"))


def wait_asked() -> float:
    """How long the client asks the stream to stay open (``?wait=``): for ever by default."""
    asked = waited(request.args.get("wait"))
    return math.inf if asked is None else asked


async def event_stream(
    after: int | None,
    write: Callable[[FeedEvent], bytes | None],
    place: str | None = None,
    seconds: float = math.inf,
) -> Response:
    """The feed's events (``place``'s only, when given) after ``after`` as a response:
    each as ``write`` makes it (None: not this stream's), a heartbeat comment while
    nothing happens. It ends after ``seconds`` (the events missed since ``after`` all
    sent), or when the feed ends it (the service stops, or the client fell too far
    behind: it resumes from its last event id)."""
    ends_at = trio.current_time() + max(0.0, min(seconds, wait_asked()))
    live = feed()
    if after is None:  # from now on: what commits before the stream begins included
        after = await live.position()

    async def events() -> AsyncIterator[bytes]:
        async with live.listen(after, place) as listening:
            while True:
                event = listening.take_missed()
                if event is None:
                    left = ends_at - trio.current_time()
                    if left <= 0:
                        return
                    with trio.move_on_after(min(HEARTBEAT_SECONDS, left)):
                        try:
                            event = await listening.receive()
                        except trio.EndOfChannel:
                            return
                    if event is None:  # nothing came in time
                        if trio.current_time() < ends_at:
                            yield HEARTBEAT
                        continue
                written = write(event)
                if written is not None:
                    yield written

    return Response(events(), content_type="text/event-stream", headers=STREAM_HEADERS)


def owner_event(event: FeedEvent) -> bytes | None:
    if event.kind == "mode":
        data = {"conversation_id": event.conversation_id, "mode": event.mode}
        return sse_event("mode", data, event.id)
    if event.turn is None or event.author is None:
        return None  # its turn is gone (cannot be: written together)
    data = {
        "conversation_id": event.conversation_id,
        "turn": event.turn,
        "author": event.author,
        "channel": event.channel,
        "mode": event.mode,
    }
    return sse_event("turn", data, event.id)


@blueprint.get("/conversations/events")
@operation(
    Reply(
        200,
        "An event stream that does not end: `turn` and `mode` events of conversations on "
        "customer channels, each with its `id:`",
        conversation_event_stream,
        "text/event-stream",
    ),
    422,
    query=EventsQuery,
    headers=LAST_EVENT_ID,
)
async def conversation_events() -> Response:
    """New messages and mode moves in customers' conversations, live

    Server-sent events for the console's inbox: `turn` when a turn is recorded in a
    conversation on a customer channel (web, telegram, whatsapp, discord, voice), `mode`
    when its mode moves. Resume after an event with the Last-Event-ID header (or
    ?after=); events are kept a day. A comment line comes every 15 s while nothing
    happens. ?wait= ends the stream after so many seconds (0: a poll of the events after
    ?after=)."""
    return await event_stream(resume_point(), owner_event)
