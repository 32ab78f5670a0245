"""POST /chat and /chat/stream: the question asked, and the answer's events."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import attrs

from ragcore.api.converter import listing, refusal
from ragcore.api.problems import Problem
from ragcore.api.schema import OneOf, Schemas, described
from ragcore.chat.pipeline import MAX_QUESTION_CHARS, ChatAnswer, check_question
from ragcore.employees.learning import ASKER_REFUSAL, MAX_ASKER_CHARS, check_asker
from ragcore.employees.roles import IDENTIFIER_RULE
from ragcore.errors import InvalidInput

ASKER = "who is asking, kept as a hash; roles learn from questions many users ask"
CONVERSATION = (
    "continue this conversation (the conversation_id of an earlier answer): a follow-up "
    "question is read with it; leave it out to begin one"
)
MAX_CONVERSATION_ID = 2**62


def check_conversation_id(value: Any) -> int | None:
    """A conversation's id: a positive integer (digits in a query string); None when not
    given."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < MAX_CONVERSATION_ID:
        raise InvalidInput("conversation_id", "must be the conversation_id of an earlier answer")
    return value


@listing(words="allowed")
@attrs.frozen
class ChatQuestion:  # the question checked; role and user None (or null) when not given
    question: Annotated[str, described(maxLength=MAX_QUESTION_CHARS)] = attrs.field(
        converter=check_question
    )
    role: Annotated[str | None, described("answer as this AI employee")] = attrs.field(
        default=None, metadata=refusal(f"must be a role identifier: {IDENTIFIER_RULE}")
    )
    user: Annotated[str | None, described(ASKER, maxLength=MAX_ASKER_CHARS)] = attrs.field(
        default=None, converter=check_asker, metadata=refusal(ASKER_REFUSAL)
    )
    conversation_id: Annotated[
        int | None, described(CONVERSATION, minimum=1, maximum=MAX_CONVERSATION_ID)
    ] = attrs.field(default=None, converter=check_conversation_id)


@attrs.frozen
class ChatQuery:
    """The same fields as query parameters (a JSON body with them also works)."""

    question: Annotated[str, described("the question (or send it in the JSON body)")] = ""
    role: Annotated[str, described("answer as this AI employee")] = ""
    user: Annotated[str, described(ASKER, maxLength=MAX_ASKER_CHARS)] = ""
    conversation_id: Annotated[str, described(CONVERSATION)] = ""


@attrs.frozen
class TokenText:
    text: Annotated[
        str,
        described(
            "the next piece of the answer as it is written; the done event holds the answer "
            "as checked"
        ),
    ]


@attrs.frozen
class ChatStreamToken:
    event: Literal["token"]
    data: TokenText


@attrs.frozen
class ChatStreamDone:
    event: Literal["done"]
    data: Annotated[ChatAnswer, described("the whole answer, as POST /chat returns it")]


@attrs.frozen
class ChatStreamError:
    event: Literal["error"]
    data: Annotated[
        Problem,
        described(
            "the answer failed after the first event (a provider breaking off: 503); a failure "
            "before it is an ordinary problem response instead of a stream"
        ),
    ]


CHAT_STREAM_EVENT = OneOf(
    "ChatStreamEvent",
    (ChatStreamToken, ChatStreamDone, ChatStreamError),
    "One server-sent event of /chat/stream: `event: <event>` and `data: <data as one line "
    "of JSON>`. Any number of `token` events, then exactly one `done` or `error` event, and "
    "the stream ends.",
)


def event_stream(schemas: Schemas) -> dict[str, Any]:
    """The stream as the list of its events, each an object of its SSE fields (OpenAPI 3.2
    models text/event-stream so; 3.1 has no itemSchema)."""
    return {"type": "array", "items": schemas.of(CHAT_STREAM_EVENT), "minItems": 1}


def sse(kind: str, data: Any) -> bytes:
    """One server-sent event of the stream: ``kind``, and ``data`` as one line of JSON."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
