"""What is kept of a conversation's turn, and how a conversation is found again.

A turn is recorded with its ``outcome``: ``answered``, ``not_found`` (the documents do
not say), ``limited`` (a token budget) or ``failed``; on a call, the call's end of the
turn (``ragcore.voice.call.FinishTurn``) may make it ``interrupted`` or ``hung up``, or
``failed`` when its speech failed. A conversation is found again by
its ``continuation`` key: on a text channel, the chat it takes place in, while its last
turn is less than ``IDLE_MINUTES`` old; on a call, the call; for a client that sends the
whole history with every request (the OpenAI protocol), the hash of the exchanges as
the client will send them back next time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from ragcore.chat.citations import MARKER
from ragcore.chat.followup import Exchange
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.converter import converter
from ragcore.effects import Effect
from ragcore.language import not_found

#: a text channel's conversation goes on while its last turn is this recent
IDLE_MINUTES = 30


@attrs.frozen
class TurnRecord:
    """One turn to record. ``conversation_id`` None begins a conversation on ``channel``;
    ``continuation`` is the key it is found again by after this turn; ``started``, when
    the turn began (the time it took, ``answer_ms``, is measured to its recording);
    ``turn``, its number in the conversation when the channel numbers its turns itself (a
    call: the question's number, so the call's own end of the turn finds it), else the
    next."""

    channel: str
    conversation_id: int | None
    question: str
    answer: str
    outcome: str
    search_question: str | None = None
    citations: list[dict[str, Any]] = attrs.field(factory=list)
    role: str | None = None
    provider: str | None = None
    model: str | None = None
    language: str | None = None
    participant: str | None = None
    continuation: str | None = None
    started: datetime | None = None
    turn: int | None = None
    author: str = "ai"  # ai, customer (a message for a person), person
    person: str | None = None  # the person who wrote (console, telegram owner)
    reply_to: dict[str, Any] | None = None  # where a person's message reaches the customer
    api_key_id: int | None = None  # the API key that asked (a conversation it begins is its)


@attrs.frozen
class Ongoing:
    """The conversation a turn belongs to (None: it begins one), its latest exchanges,
    and when the turn began (the handler's clock); its ``mode`` (``ragcore.handoff``),
    the AI's grounded ``refusals`` in a row, and when it was last written in."""

    conversation_id: int | None
    history: tuple[Exchange, ...]
    started: datetime
    mode: str = "ai"
    refusals: int = 0
    last_message_at: datetime | None = None


@attrs.frozen
class LoadConversation(Effect[Ongoing]):
    """The conversation on ``channel`` whose key is ``key`` (kept only as a hash), when its
    last turn is less than ``idle_minutes`` old (0: however old); or the conversation
    ``conversation_id`` (a 404 problem when there is none). Neither: the turn begins
    one. Result: ``Ongoing``."""

    runs_ahead = True

    channel: str
    key: str | None = None
    idle_minutes: int = IDLE_MINUTES
    conversation_id: int | None = None
    #: only a conversation asked with this API key (a chat key's; another is unknown)
    api_key_id: int | None = None


@attrs.frozen
class RecordedTurn:
    """Where a turn was recorded: its conversation, and its number in it."""

    conversation_id: int
    turn: int


@attrs.frozen
class RecordTurn(Effect[RecordedTurn]):
    """Record ``record`` (``ragio.chat.conversations``). Result: where it was recorded."""

    record: TurnRecord


def turn_outcome(answer: ChatAnswer) -> str:
    if answer.held:
        return "to_person"
    if answer.mode == "human":
        return "handed_off"
    if answer.limited:
        return "limited"
    said = not_found(answer.language or "en")
    if answer.provider is None and not answer.citations and answer.answer == said:
        return "not_found"
    return "answered"


def continuation(exchanges: Sequence[Exchange]) -> str | None:
    """The key of a conversation whose exchanges are these (None: no exchange yet).
    Whitespace is not significant: clients trim and rewrap the texts they send back. Nor
    are an answer's citation markers: a streamed answer's client keeps the text as it
    streamed, markers to sources that do not exist included, where the turn records it
    with those removed (``resolve_citations``)."""
    if not exchanges:
        return None
    texts = [
        [" ".join(e.question.split()), " ".join(MARKER.sub("", e.answer).split())]
        for e in exchanges
    ]
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode("utf-8")).hexdigest()


def place_key(channel: str, place: str) -> str:
    """The key of the conversation taking place in ``place`` on ``channel`` (a chat id,
    a phone address, a call): a hash, so the place itself is not kept."""
    return hashlib.sha256(f"{channel}:{place}".encode()).hexdigest()


def turn_record(
    channel: str,
    conversation_id: int | None,
    request: ChatRequest,
    outcome: ChatAnswer | None,
    *,
    participant: str | None = None,
    key: str | None = None,
    started: datetime | None = None,
    turn: int | None = None,
    reply_to: dict[str, Any] | None = None,
    api_key_id: int | None = None,
) -> TurnRecord:
    """The record of ``request``'s turn: answered with ``outcome``, or failed (None).
    ``key``: the conversation's continuation key; None keeps the exchanges' hash."""
    if outcome is None:
        return TurnRecord(
            channel=channel,
            conversation_id=conversation_id,
            question=request.question,
            answer="",
            outcome="failed",
            role=request.role,
            participant=participant,
            continuation=key if key is not None else continuation(request.history),
            started=started,
            turn=turn,
            reply_to=reply_to,
            api_key_id=api_key_id,
        )
    exchanges = [
        *request.history,
        Exchange(request.question, outcome.answer, outcome.search_question),
    ]
    return TurnRecord(
        channel=channel,
        conversation_id=conversation_id,
        question=request.question,
        answer=outcome.answer,
        outcome=turn_outcome(outcome),
        search_question=outcome.search_question,
        citations=[converter.unstructure(citation) for citation in outcome.citations],
        role=outcome.role,
        provider=outcome.provider,
        model=outcome.model,
        language=outcome.language,
        participant=participant,
        continuation=key if key is not None else continuation(exchanges),
        started=started,
        turn=turn,
        author="customer" if outcome.held else "ai",
        reply_to=reply_to,
        api_key_id=api_key_id,
    )
