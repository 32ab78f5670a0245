"""The live views' server-sent events (docs/handoff.md): the owner's
(``GET /conversations/events``, the console's inbox) and a widget visitor's
(``GET /widget/events``). Each event has its ``id:``, which a client resumes after
(``Last-Event-ID``, or ``?after=``)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

import attrs

from ragcore.errors import InvalidInput
from ragcore.schema import OneOf, Schemas, described

Mode = Literal["ai", "human", "closed"]
Author = Literal["ai", "customer", "person"]
#: an event id as a client sends it back: digits, at most 18
EVENT_ID = r"^[0-9]{1,18}$"
EVENT_ID_DOC = described("the event's id: resume after it (Last-Event-ID)", pattern=EVENT_ID)
#: a comment line that keeps the connection open while nothing happens
HEARTBEAT = b": keep-alive\n\n"


#: the longest a stream asked to end (``?wait=``) is held open
MAX_WAIT_SECONDS = 3600


@attrs.frozen
class EventsQuery:
    after: Annotated[
        str,
        described(
            "resume after this event id (as the Last-Event-ID header does); none: only the "
            "events from now",
            pattern=f"^(?:{EVENT_ID[1:-1]})?$",
        ),
    ] = ""
    wait: Annotated[
        str,
        described(
            f"end the stream after this many seconds (at most {MAX_WAIT_SECONDS}); 0: the "
            "events after `after`, then the end (a poll); none: the stream does not end",
            pattern="^[0-9]{0,4}$",
        ),
    ] = ""


def waited(query: str | None) -> float | None:
    """``?wait=``: the seconds a stream is held open; None: it does not end."""
    if query is None or not query.strip():
        return None
    if not re.fullmatch("[0-9]{1,4}", query.strip()) or int(query) > MAX_WAIT_SECONDS:
        raise InvalidInput("wait", f"must be a number of seconds from 0 to {MAX_WAIT_SECONDS}")
    return float(query)


def resumed_after(header: str | None, query: str | None) -> int | None:
    """The event id a client resumes after: ``Last-Event-ID`` (what a reconnecting
    EventSource sends), else ``?after=``; None: from now on. InvalidInput for anything
    but an id."""
    for field, given in (("Last-Event-ID", header), ("after", query)):
        if given is None or not given.strip():
            continue
        if not re.fullmatch(EVENT_ID, given.strip()):
            raise InvalidInput(field, "must be the id of an event of this stream (digits)")
        return int(given.strip())
    return None


def sse_event(kind: str, data: Any, event_id: int) -> bytes:
    """One server-sent event with its id."""
    body = json.dumps(data, ensure_ascii=False)
    return f"id: {event_id}\nevent: {kind}\ndata: {body}\n\n".encode()


# ---------------------------------------------------------------- the owner's


@attrs.frozen
class TurnEventData:
    conversation_id: int
    turn: int
    author: Annotated[Author, described("who wrote it: the AI, the customer, a person")]
    channel: str
    mode: Annotated[Mode, described("the conversation's mode")]


@attrs.frozen
class ModeEventData:
    conversation_id: int
    mode: Annotated[Mode, described("the conversation's new mode")]


@attrs.frozen
class TurnEvent:
    event: Literal["turn"]
    id: Annotated[str, EVENT_ID_DOC]
    data: Annotated[TurnEventData, described("a turn recorded: GET /conversations/{id} shows it")]


@attrs.frozen
class ModeEvent:
    event: Literal["mode"]
    id: Annotated[str, EVENT_ID_DOC]
    data: ModeEventData


CONVERSATION_EVENT = OneOf(
    "ConversationEvent",
    (TurnEvent, ModeEvent),
    "One server-sent event of /conversations/events: `id: <id>`, `event: <event>` and "
    "`data: <data as one line of JSON>`, in a conversation on a customer channel. The "
    "stream does not end; a comment line (`: keep-alive`) comes when nothing happened for "
    "15 s.",
)


def conversation_event_stream(schemas: Schemas) -> dict[str, Any]:
    """The stream as the list of its events (as ``ragcore.api.chat.event_stream``)."""
    return {"type": "array", "items": schemas.of(CONVERSATION_EVENT)}


# ---------------------------------------------------------------- a widget visitor's


@attrs.frozen
class VisitorMessageData:
    turn: int
    author: Annotated[Author, described("person: a person of the business wrote it")]
    answer: Annotated[str, described("the message's text")]


@attrs.frozen
class VisitorModeData:
    mode: Annotated[
        Mode, described("human: a person answers here; ai: the assistant again; closed")
    ]


@attrs.frozen
class VisitorMessageEvent:
    event: Literal["message"]
    id: Annotated[str, EVENT_ID_DOC]
    data: VisitorMessageData


@attrs.frozen
class VisitorModeEvent:
    event: Literal["mode"]
    id: Annotated[str, EVENT_ID_DOC]
    data: VisitorModeData


VISITOR_EVENT = OneOf(
    "WidgetEvent",
    (VisitorMessageEvent, VisitorModeEvent),
    "One server-sent event of /widget/events, in the visitor's own conversation: a "
    "person's `message`, or its `mode` moving. The stream does not end; a comment line "
    "(`: keep-alive`) comes when nothing happened for 15 s.",
)


def visitor_event_stream(schemas: Schemas) -> dict[str, Any]:
    return {"type": "array", "items": schemas.of(VISITOR_EVENT)}
