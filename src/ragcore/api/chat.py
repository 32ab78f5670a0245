"""POST /chat and /chat/stream: the question asked, and the answer's events."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

import attrs

from ragcore.api.problems import Problem
from ragcore.chat.pipeline import MAX_QUESTION_CHARS, ChatAnswer, check_question
from ragcore.converter import listing, refusal
from ragcore.employees.learning import ASKER_REFUSAL, MAX_ASKER_CHARS, check_asker
from ragcore.employees.roles import _IDENTIFIER, IDENTIFIER_RULE
from ragcore.errors import InvalidInput
from ragcore.inputs import NOT_BLANK, blank_or
from ragcore.schema import OneOf, Schemas, described, text

IDENTIFIER = _IDENTIFIER.pattern

ASKER = "who is asking, kept as a hash; roles learn from questions many users ask"
CONVERSATION = (
    "continue this conversation (the conversation_id of an earlier answer): a follow-up "
    "question is read with it; leave it out to begin one"
)
MAX_CONVERSATION_ID = 10**18  # a power of ten: in a query string, at most 18 digits
#: ``?conversation_id=`` as a pattern: what ``query_conversation_id`` takes
CONVERSATION_ID_QUERY = f"^(?:[1-9][0-9]{{0,{len(str(MAX_CONVERSATION_ID)) - 2}}})?$"
CONVERSATION_REFUSAL = "must be the conversation_id of an earlier answer"
#: the question, as ``check_question`` takes it
QUESTION = text(MAX_QUESTION_CHARS)


def check_conversation_id(value: Any) -> int | None:
    """A conversation's id: a positive integer; None when not given."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < MAX_CONVERSATION_ID:
        raise InvalidInput("conversation_id", CONVERSATION_REFUSAL)
    return value


def query_conversation_id(raw: str) -> int | None:
    """``?conversation_id=``: its digits (``CONVERSATION_ID_QUERY``); None when empty."""
    if not re.fullmatch(CONVERSATION_ID_QUERY, raw):
        raise InvalidInput("conversation_id", CONVERSATION_REFUSAL)
    return int(raw) if raw else None


ROLE = blank_or(IDENTIFIER)
ASKER_TEXT = blank_or(NOT_BLANK)


@listing(words="allowed")
@attrs.frozen
class ChatQuestion:
    """The question checked; role and user None (or null) when not given. The question is
    required here or as ?question= (which wins, as every field given in the query does)."""

    question: Annotated[str, QUESTION] = attrs.field(default=None, converter=check_question)
    role: Annotated[str | None, described("answer as this AI employee", pattern=ROLE)] = (
        attrs.field(default=None, metadata=refusal(f"must be a role identifier: {IDENTIFIER_RULE}"))
    )
    user: Annotated[str | None, described(ASKER, maxLength=MAX_ASKER_CHARS, pattern=ASKER_TEXT)] = (
        attrs.field(default=None, converter=check_asker, metadata=refusal(ASKER_REFUSAL))
    )
    conversation_id: Annotated[
        int | None, described(CONVERSATION, minimum=1, maximum=MAX_CONVERSATION_ID - 1)
    ] = attrs.field(default=None, converter=check_conversation_id)


@attrs.frozen
class ChatQuery:
    """The same fields as query parameters (a JSON body with them also works); an empty
    one is not given."""

    question: Annotated[
        str,
        described(
            "the question (or send it in the JSON body)",
            maxLength=MAX_QUESTION_CHARS,
            pattern=blank_or(NOT_BLANK),
        ),
    ] = ""
    role: Annotated[str, described("answer as this AI employee", pattern=ROLE)] = ""
    user: Annotated[str, described(ASKER, maxLength=MAX_ASKER_CHARS, pattern=ASKER_TEXT)] = ""
    conversation_id: Annotated[str, described(CONVERSATION, pattern=CONVERSATION_ID_QUERY)] = ""


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
