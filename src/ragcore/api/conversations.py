"""GET /conversations and GET /conversations/{id}: what was asked and answered, on which
channel, by which role, with the citations, how long it took and how the asker rated
it (POST /conversations/{id}/turns/{turn}/feedback: ``TurnFeedback``, with an optional
comment: ``check_comment``, ``RATED_OR_NO_COMMENT``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import attrs

from ragcore.api.queries import contains_pattern
from ragcore.channel_names import CONVERSATION_CHANNELS
from ragcore.channels.person import MAX_MESSAGE_CHARS
from ragcore.chat.citations import Citation
from ragcore.chat.timings import described_stages
from ragcore.converter import refusal
from ragcore.errors import InvalidInput, check_text
from ragcore.handoff.modes import MODES, Mode
from ragcore.inputs import SPACE
from ragcore.schema import described, text, whole

DEFAULT_CONVERSATIONS = 20
MAX_CONVERSATIONS = 100
MAX_CONVERSATION_ID = 2**62
MAX_TURN = 2**31 - 1  # turns are numbered by a PostgreSQL integer
#: a listed conversation's first question and last message: their first characters
EXCERPT_CHARS = 200
#: ``q``, the text searched for in the turns, at most
MAX_SEARCH_CHARS = 200
CHANNELS = CONVERSATION_CHANNELS
#: a turn's ratings: null is none (never given, or taken back)
RATINGS = ("up", "down")
Rating = Literal["up", "down"]
RATING_REFUSAL = 'must be "up", "down" or null (null takes the rating back)'
#: a rating's comment, at most (as sent; stored stripped, a blank one is none)
MAX_COMMENT_CHARS = 1000
COMMENT_MEANING = (
    f"why, in the asker's words: at most {MAX_COMMENT_CHARS} characters, stored stripped "
    "(blank: none); only with a rating up or down"
)
COMMENT_WITHOUT_RATING = (
    'goes with a rating ("up" or "down"); a rating of null takes the rating back, and its '
    "comment with it"
)
#: the schema of a feedback body as a whole: a rating, or no comment (absent, null, blank)
RATED_OR_NO_COMMENT = [
    {"required": ["rating"], "properties": {"rating": {"enum": list(RATINGS)}}},
    {"properties": {"comment": {"type": ["string", "null"], "pattern": f"^[{SPACE}]*$"}}},
]
#: since and until: a date, a date and time (RFC 3339), or empty (``instant``)
MODE_MEANING = (
    "ai: the AI answers; human: a person answers (the AI stays silent); closed: the "
    "customer's next message begins a new conversation"
)
INSTANT = {"anyOf": [{"format": "date"}, {"format": "date-time"}, {"const": ""}]}


@attrs.frozen
class ConversationTurn:
    turn: int
    question: str
    search_question: Annotated[
        str | None, described("the standalone question searched for a follow-up; null: as asked")
    ]
    answer: str
    outcome: Annotated[
        Literal[
            "answered",
            "not_found",
            "limited",
            "failed",
            "interrupted",
            "hung up",
            "handed_off",
            "to_person",
            "sent",
            "not_delivered",
        ],
        described(
            "on a call, also how its turn ended (interrupted, hung up); handed_off: the AI "
            "handed the conversation to a person with this answer; to_person: a customer's "
            "message waiting for a person; sent, not_delivered: a person's message"
        ),
    ]
    citations: list[Citation]
    role: str | None
    provider: Annotated[str | None, described("null when no provider was asked")]
    model: str | None
    language: str | None
    timings: Annotated[
        dict[str, int],
        described(
            "milliseconds: answer_ms, the whole turn; and, on every channel, the stages it "
            "reached, each the time its steps took, together never more than answer_ms: "
            f"{described_stages()}. On a call, also the stages of GET /voice/calls (its "
            "answer_ms and first_token_ms are the call's, from the transcript)"
        ),
    ]
    created_at: datetime
    feedback: Annotated[
        Rating | None, described("the asker's rating of the answer; null: none, or taken back")
    ]
    feedback_at: Annotated[datetime | None, described("when it was rated; null: not rated")]
    feedback_comment: Annotated[
        str | None, described("what the asker said with the rating; null: nothing")
    ]
    author: Annotated[
        Literal["ai", "customer", "person"],
        described(
            "who wrote the answer: ai (a question and the AI's answer), customer (a message "
            "for a person: question only), person (a person's message: answer only)"
        ),
    ] = "ai"
    person: Annotated[
        str | None, described("the person who wrote: console, api, telegram owner")
    ] = None


def check_comment(value: Any) -> str | None:
    """A rating's comment: text of at most MAX_COMMENT_CHARS characters as sent (the
    schema's ``maxLength``), stripped; None when null or blank. InvalidInput naming
    ``comment`` otherwise."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("comment", "must be text (or null)")
    if len(value) > MAX_COMMENT_CHARS:
        raise InvalidInput(
            "comment", f"has {len(value)} characters; the limit is {MAX_COMMENT_CHARS}"
        )
    return value.strip() or None


def check_rated(rating: str | None, comment: str | None) -> None:
    """A comment only with a rating (``RATED_OR_NO_COMMENT``): InvalidInput naming
    ``comment`` for a comment with a rating of null."""
    if rating is None and comment is not None:
        raise InvalidInput("comment", COMMENT_WITHOUT_RATING)


@whole(anyOf=RATED_OR_NO_COMMENT)
@attrs.frozen
class TurnFeedback:
    """POST /conversations/{id}/turns/{turn}/feedback (and the widget's feedback): the
    rating of a turn's answer, with an optional comment, or null to take it back (its
    comment with it)."""

    rating: Annotated[Rating | None, described("up or down; null takes a rating back")] = (
        attrs.field(metadata=refusal(RATING_REFUSAL))
    )
    comment: Annotated[str | None, described(COMMENT_MEANING, maxLength=MAX_COMMENT_CHARS)] = (
        attrs.field(default=None, converter=check_comment)
    )

    def __attrs_post_init__(self) -> None:
        check_rated(self.rating, self.comment)


@attrs.frozen
class LastMessage:
    author: Literal["customer", "ai", "person"]
    text: Annotated[str, described(f"its first {EXCERPT_CHARS} characters")]


@attrs.frozen
class ConversationSummary:
    id: Annotated[int, described("for ?before= (paging) and GET /conversations/{id}")]
    channel: Annotated[str, described(f"where it took place: {', '.join(CHANNELS)}")]
    role: Annotated[str | None, described("the role answering; null: no role")]
    participant_hash: Annotated[
        str | None,
        described(
            "SHA-256 of <channel>:<user>: the same user gives the same hash; null when the "
            "client named nobody"
        ),
    ]
    started_at: datetime
    updated_at: Annotated[datetime, described("its last activity: the latest turn")]
    turn_count: int
    mode: Annotated[Mode, described(MODE_MEANING)] = "ai"
    waiting_since: Annotated[
        datetime | None,
        described("when the oldest customer message not yet answered by a person came"),
    ] = None
    first_question: Annotated[
        str | None,
        described(
            f"the first question asked in it (its first {EXCERPT_CHARS} characters); null: none yet"
        ),
    ] = None
    last_message: Annotated[
        LastMessage | None, described("the last thing written in it; null: no turn yet")
    ] = None


@attrs.frozen
class HandoffLogEntry:
    at: datetime
    event: Annotated[
        Literal["moved", "refused"], described("moved: the mode changed; refused: a write was")
    ]
    from_mode: Mode
    to_mode: Mode
    by: Annotated[
        str, described("customer, rule, timeout, or the owner: console, api, telegram owner")
    ]
    detail: str


@attrs.frozen
class Conversations:
    conversations: list[ConversationSummary]
    total: Annotated[
        int, described("how many conversations match the filters (and q), on all pages")
    ]
    next_before: Annotated[int | None, described("?before= for the next page; null: the last")]


@attrs.frozen
class Conversation:
    id: int
    channel: str
    role: str | None
    participant_hash: str | None
    started_at: datetime
    updated_at: datetime
    turn_count: int
    turns: list[ConversationTurn]
    mode: Annotated[Mode, described(MODE_MEANING)] = "ai"
    waiting_since: datetime | None = None
    handoff_log: Annotated[
        list[HandoffLogEntry], described("every move of its mode and every refused write")
    ] = attrs.Factory(list)


@attrs.frozen
class ConversationsQuery:
    limit: Annotated[int, described(minimum=1, maximum=MAX_CONVERSATIONS)] = DEFAULT_CONVERSATIONS
    before: Annotated[
        int,
        described(
            "the conversations begun before this one, latest first (next_before of the last page)",
            minimum=1,
            maximum=MAX_CONVERSATION_ID,
        ),
    ] = 0
    channel: Annotated[str, described("only this channel", enum=["", *CHANNELS])] = ""
    role: Annotated[str, described("only those answered by this role")] = ""
    since: Annotated[
        str,
        described(
            "only those active from this instant (a date is its midnight UTC, a time without "
            "an offset is UTC)",
            **INSTANT,
        ),
    ] = ""
    until: Annotated[
        str, described("only those last active before this instant, later than since", **INSTANT)
    ] = ""
    mode: Annotated[
        str, described("only those in this mode (human: the inbox)", enum=["", *MODES])
    ] = ""
    q: Annotated[
        str,
        described(
            "only those with a turn whose question or answer contains this, in any case "
            "(% and _ are plain characters)",
            maxLength=MAX_SEARCH_CHARS,
        ),
    ] = ""

    def filters(self) -> dict[str, Any]:
        """The query's filters for the store, checked: InvalidInput naming a bad one;
        ``text``: the ILIKE pattern of ``q`` (None: every conversation)."""
        where = channel_and_span(self.channel, self.since, self.until)
        if self.mode and self.mode not in MODES:
            raise InvalidInput("mode", f"must be one of {', '.join(MODES)}")
        text = contains_pattern(self.q)
        return {"mode": self.mode or None, "role": self.role or None, "text": text, **where}


def channel_and_span(channel: str, since: str, until: str) -> dict[str, Any]:
    """A query's ``channel``, ``since`` and ``until`` checked (InvalidInput naming a bad
    one; until later than since), for the store: None where not given."""
    if channel and channel not in CHANNELS:
        raise InvalidInput("channel", f"must be one of {', '.join(CHANNELS)}")
    start, end = instant(since, "since"), instant(until, "until")
    if start is not None and end is not None and start >= end:
        raise InvalidInput("until", "must be later than since")
    return {"channel": channel or None, "since": start, "until": end}


def turn_number(raw: str) -> int | None:
    """A path's turn number, or None when it cannot be one (nothing has it: 404)."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(MAX_TURN)):
        return None
    number = int(raw)
    return number if 0 < number <= MAX_TURN else None


def instant(raw: str, name: str) -> datetime | None:
    """An ISO 8601 date or date-time as an aware instant (UTC when it names no offset);
    None when blank; InvalidInput naming ``name`` otherwise."""
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.upper())  # RFC 3339 allows "t" and "z"
    except ValueError:
        raise InvalidInput(name, "must be an ISO 8601 date or date-time") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _message_text(value: Any) -> str:
    return check_text(value, "text", MAX_MESSAGE_CHARS)


@attrs.frozen
class PersonMessageBody:
    """POST /conversations/{id}/messages: a person's message to the customer."""

    text: Annotated[str, text(MAX_MESSAGE_CHARS)] = attrs.field(converter=_message_text)


@attrs.frozen
class PersonMessageSent:
    conversation_id: int
    turn: Annotated[int | None, described("the message's turn; null: it could not be recorded")]
    delivered: Annotated[bool, described("whether it reached the customer on their channel")]
    detail: Annotated[str, described("how it went, in words")]
    mode: Mode


def _reason(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput("reason", "must be text")
    if len(value) > 500:
        raise InvalidInput("reason", f"has {len(value)} characters; the limit is 500")
    return value.strip()


@attrs.frozen
class ModeChange:
    """POST /conversations/{id}/mode: the owner takes over (human), hands back (ai) or
    closes the conversation."""

    mode: Annotated[Mode, described(MODE_MEANING)] = attrs.field(
        metadata=refusal(f"must be one of {', '.join(MODES)}")
    )
    reason: Annotated[str, described("why, for the conversation's log", maxLength=500)] = (
        attrs.field(default="", converter=_reason)
    )


@attrs.frozen
class ModeChanged:
    conversation_id: int
    mode: Mode
