"""A conversation's turn, on every channel: one pipeline for /chat, /chat/stream, both
/v1/chat/completions paths, the text channels and the phone.

In order: the conversation the turn belongs to is loaded (``LoadConversation``); the
question is answered with it as the history a follow-up is read with (standalone
question, live data, retrieval, answer: ``ragcore.chat.pipeline.answer_question``); the
channel delivers the outcome when it has a step of its own for that (a text channel's
reply); and the turn is recorded (``RecordTurn``), a failed one too. The drivers only
translate: their wire format into a ``TurnRequest``, the pipeline's text and outcome
into their wire format.

Bookkeeping never costs the asker their answer: a conversation that could not be loaded
is answered without its history, and a turn that could not be recorded is still
answered; what went wrong is in ``TurnOutcome.failures`` (or, when answering failed too,
in the error's notes) for the driver's log.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeAlias, TypeVar

import attrs

from ragcore.chat.history import (
    IDLE_MINUTES,
    LoadConversation,
    Ongoing,
    RecordedTurn,
    RecordTurn,
    continuation,
    turn_record,
)
from ragcore.chat.pipeline import ChatAnswer, ChatEffect, ChatPolicy, ChatRequest, answer_question

#: what a turn asks for: its conversation, the answer's effects, the turn recorded
TurnEffect: TypeAlias = LoadConversation | RecordTurn | ChatEffect
#: the effects of a channel's delivery step (a text channel's ``SendReply``)
D = TypeVar("D")
#: a channel's own step between answering and recording: sending the reply
Deliver: TypeAlias = Callable[[ChatAnswer | Exception], Generator[D, Any, None]]


@attrs.frozen
class TurnRequest:
    """A question asked in a conversation on ``channel`` (``chat``, ``openai``, a text
    channel, ``voice``), by ``participant`` (kept only as a hash).

    The conversation is the one the client named (``conversation_id``: unknown is a 404,
    never a new conversation), the one taking place at ``place`` (a chat or a call: its
    ``place_key``) while its last turn is under ``idle_minutes`` old (0: however old), or
    else the one whose exchanges are the history the client sent with the question
    (``request.history``, the OpenAI protocol; none: the turn begins a conversation).
    ``turn``: its number in the conversation, when the channel numbers them (a call)."""

    request: ChatRequest
    channel: str
    participant: str | None = None
    conversation_id: int | None = None
    place: str | None = None
    idle_minutes: int = IDLE_MINUTES
    turn: int | None = None

    @property
    def history_sent(self) -> bool:
        """Whether the client sends the history itself (then it is the one used)."""
        return self.conversation_id is None and self.place is None

    def loading(self) -> LoadConversation:
        if self.conversation_id is not None:
            return LoadConversation(self.channel, conversation_id=self.conversation_id)
        if self.place is not None:
            return LoadConversation(self.channel, self.place, self.idle_minutes)
        return LoadConversation(self.channel, continuation(self.request.history), 0)


@attrs.frozen
class TurnOutcome:
    """The answer, with the id of the conversation it was recorded in (None: it could
    not be recorded), and what went wrong on the way without stopping it."""

    answer: ChatAnswer
    failures: tuple[Exception, ...] = ()


def take_turn(
    turn: TurnRequest, policy: ChatPolicy, deliver: Deliver[D] | None = None
) -> Generator[TurnEffect | D, Any, TurnOutcome]:
    """Answer ``turn`` in its conversation, deliver the answer (``deliver``, when the
    channel has that step) and record the turn. A failure to answer is delivered,
    recorded as a failed turn, then raised; so is a failure to deliver, once the turn is
    recorded; an unknown ``conversation_id`` is raised before anything else happens.
    Its effects are ``TurnEffect`` and the delivery's own."""
    failures: list[Exception] = []
    ongoing: Ongoing | None = None
    try:
        ongoing = yield turn.loading()
    except Exception as error:
        if turn.conversation_id is not None:  # the client named it: theirs to hear
            raise
        failures.append(error)  # answered without it
    request = turn.request
    if ongoing is not None and not turn.history_sent:
        request = attrs.evolve(request, history=ongoing.history)
    try:
        answer: ChatAnswer = yield from answer_question(request, policy)
    except Exception as error:
        failures += yield from _deliver(deliver, error)
        failures += (yield from _record(turn, request, None, ongoing))[1]
        _note(error, failures)
        raise
    undelivered = yield from _deliver(deliver, answer)
    recorded, unrecorded = yield from _record(turn, request, answer, ongoing)
    failures += unrecorded
    if undelivered:  # the asker never saw it; it is recorded all the same
        raise _note(undelivered[0], failures)
    if recorded is not None:
        answer = attrs.evolve(answer, conversation_id=recorded.conversation_id, turn=recorded.turn)
    return TurnOutcome(answer, tuple(failures))


def _note(error: Exception, failures: list[Exception]) -> Exception:
    """``error``, with what else went wrong noted on it (for the driver's log)."""
    for failure in failures:
        error.add_note(f"also, on the way: {type(failure).__name__}: {failure}")
    return error


def _deliver(
    deliver: Deliver[D] | None, outcome: ChatAnswer | Exception
) -> Generator[D, Any, list[Exception]]:
    if deliver is None:
        return []
    try:
        yield from deliver(outcome)
    except Exception as error:  # the turn is still recorded
        return [error]
    return []


def _record(
    turn: TurnRequest, request: ChatRequest, answer: ChatAnswer | None, ongoing: Ongoing | None
) -> Generator[RecordTurn, Any, tuple[RecordedTurn | None, list[Exception]]]:
    """Record the turn: where it was recorded, or what went wrong."""
    record = turn_record(
        turn.channel,
        ongoing.conversation_id if ongoing is not None else None,
        request,
        answer,
        participant=turn.participant,
        key=turn.place,
        started=ongoing.started if ongoing is not None else None,
        turn=turn.turn,
    )
    try:
        recorded: RecordedTurn = yield RecordTurn(record)
    except Exception as error:  # the asker has their answer; the driver's log says it
        return None, [error]
    return recorded, []
