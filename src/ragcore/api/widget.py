"""The widget's routes: the owner's sites (``/widget/sites``) and the visitor's session,
questions, conversation and feedback (``/widget/...``, no API key: docs/widget.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import attrs

from ragcore.api.chat import ChatStreamToken
from ragcore.api.conversation_events import Author, Mode
from ragcore.api.conversations import (
    COMMENT_MEANING,
    MAX_COMMENT_CHARS,
    RATED_OR_NO_COMMENT,
    check_comment,
    check_rated,
)
from ragcore.api.problems import Problem
from ragcore.chat.citations import Citation
from ragcore.chat.pipeline import MAX_QUESTION_CHARS, ChatAnswer, check_question
from ragcore.converter import listing
from ragcore.errors import InvalidInput
from ragcore.schema import OneOf, Schemas, described, text, whole
from ragcore.widget.sites import MAX_NAME_CHARS, READ_ONLY_FIELDS, Position, Site, SitePatch
from ragcore.widget.tokens import MAX_TOKEN_CHARS, MAX_USER_ID_CHARS


@attrs.frozen
class Sites:
    sites: list[Site]


@attrs.frozen
class SiteCreated(Site):
    identity_secret: Annotated[
        str,
        described(
            "signs a logged-in customer's id (HMAC-SHA256, hex) on the owner's server; shown "
            "only now (POST /widget/sites/{id}/identity-secret makes a new one)"
        ),
    ] = ""


@attrs.frozen
class IdentitySecret:
    identity_secret: Annotated[str, described("the new secret; the old one verifies no more")]


def _user_id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("user_id", "must be the customer's id, as text")
    if len(value) > MAX_USER_ID_CHARS:
        raise InvalidInput("user_id", f"is longer than {MAX_USER_ID_CHARS} characters")
    return value.strip()


@listing(words="allowed")
@attrs.frozen
class NewSession:
    site: Annotated[str, described("the site's public id (the page's data-site)", maxLength=40)]
    renew: Annotated[
        str | None,
        described("the previous token: the same visitor goes on", maxLength=MAX_TOKEN_CHARS),
    ] = None
    user_id: Annotated[str | None, text(MAX_USER_ID_CHARS, "a logged-in customer's id")] = (
        attrs.field(default=None, converter=_user_id)
    )
    user_hash: Annotated[
        str | None, described("hex HMAC-SHA256 of user_id with the site's identity secret")
    ] = None


@attrs.frozen
class SiteLook:
    """What the widget shows of its site."""

    name: str
    greeting: Annotated[str, described("blank: the widget's own, in the visitor's language")]
    colour: str
    position: Position


@attrs.frozen
class Session:
    token: Annotated[str, described("send as Authorization: Bearer on every widget call")]
    expires_at: datetime
    visitor: Annotated[str, described("the visitor's id, made by the service")]
    verified: Annotated[bool, described("true when a customer's id was verified")]
    site: SiteLook


@listing(words="allowed")
@attrs.frozen
class WidgetQuestion:
    question: Annotated[str, text(MAX_QUESTION_CHARS)] = attrs.field(converter=check_question)


Rating = Literal["up", "down"]


@listing(words="allowed")
@whole(anyOf=RATED_OR_NO_COMMENT)
@attrs.frozen
class WidgetFeedback:
    turn: Annotated[int, described("the answer's turn (the done event's turn)", minimum=1)]
    rating: Annotated[Rating | None, described("up, down, or null to take it back")]
    comment: Annotated[str | None, described(COMMENT_MEANING, maxLength=MAX_COMMENT_CHARS)] = (
        attrs.field(default=None, converter=check_comment)
    )

    def __attrs_post_init__(self) -> None:
        check_rated(self.rating, self.comment)


@attrs.frozen
class WidgetTurn:
    turn: int
    question: Annotated[str, described("blank for a person's message")]
    answer: Annotated[str, described("blank while a customer's message waits for a person")]
    citations: list[Citation]
    feedback: Rating | None = None
    author: Annotated[
        Author,
        described(
            "who answered: ai (the assistant), person (a person of the business wrote "
            "answer), customer (the question waits for a person)"
        ),
    ] = "ai"


@attrs.frozen
class WidgetConversation:
    conversation_id: Annotated[int | None, described("null: none is going on")]
    turns: list[WidgetTurn]


@listing(read_only=READ_ONLY_FIELDS)
@attrs.frozen
class NewSite(SitePatch):
    """A POST's body: a PATCH's fields, ``name`` required (the schema; ``check_new``
    reads it)."""

    name: Annotated[str, text(MAX_NAME_CHARS)] = attrs.field(kw_only=True)


@attrs.frozen
class WidgetAnswer:
    """An answer as a visitor sees it: what /chat returns, less what is the owner's to
    know (which provider and model, the tokens, the role's grounding check)."""

    answer: str
    citations: list[Citation]
    turn: Annotated[int | None, described("what feedback on it names; null if not recorded")]
    language: str | None = None
    limited: Annotated[bool, described("true when the service's token budget stopped it")] = False
    mode: Annotated[
        Mode,
        described("human: a person answers this conversation from now on (GET /widget/events)"),
    ] = "ai"
    held: Annotated[
        bool,
        described("true: no answer from the assistant: the message waits for a person (blank)"),
    ] = False


def visitor_answer(answer: ChatAnswer) -> WidgetAnswer:
    return WidgetAnswer(
        answer.answer,
        list(answer.citations),
        answer.turn,
        answer.language,
        answer.limited,
        answer.mode,
        answer.held,
    )


#: what a visitor reads when their question could not be answered (the owner's log says
#: why: which provider failed, and how)
VISITOR_FAILURE = "The assistant is not available right now: please try again later."


def visitor_problem(status: int, title: str) -> Problem:
    """A failure as a visitor sees it: its status, without the providers tried."""
    return Problem("about:blank", title, status, VISITOR_FAILURE)


@attrs.frozen
class WidgetStreamDone:
    event: Literal["done"]
    data: WidgetAnswer


@attrs.frozen
class WidgetStreamError:
    event: Literal["error"]
    data: Annotated[Problem, described("the answer failed after the first event")]


WIDGET_STREAM_EVENT = OneOf(
    "WidgetStreamEvent",
    (ChatStreamToken, WidgetStreamDone, WidgetStreamError),
    "One server-sent event of /widget/chat/stream: any number of `token` events, then "
    "exactly one `done` or `error` event.",
)


def widget_event_stream(schemas: Schemas) -> dict[str, Any]:
    """The stream as the list of its events (as ``ragcore.api.chat.event_stream``)."""
    return {"type": "array", "items": schemas.of(WIDGET_STREAM_EVENT), "minItems": 1}
