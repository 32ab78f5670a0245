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
    turn_outcome,
    turn_record,
)
from ragcore.chat.pipeline import ChatAnswer, ChatEffect, ChatPolicy, ChatRequest, answer_question
from ragcore.handoff.asking import asks_for_person
from ragcore.handoff.effects import LoadBusiness, MoveMode, NotifyOwnerOfHandoff
from ragcore.handoff.modes import (
    CUSTOMER,
    HANDOFF_CHANNELS,
    RULE,
    TIMEOUT,
    refusals_hand_off,
    timed_out,
)
from ragcore.handoff.notices import Business, handoff_notice

#: what a turn asks for: its conversation, the answer's effects, the turn recorded, and
#: on a customer's channel the handoff's (the mode moved, the business, the owner told)
TurnEffect: TypeAlias = (
    LoadConversation | RecordTurn | ChatEffect | MoveMode | LoadBusiness | NotifyOwnerOfHandoff
)
#: the effects of a channel's delivery step (a text channel's ``SendReply``)
D = TypeVar("D")
#: a channel's own step between answering and recording: sending the reply; it returns
#: what it delivered (a text channel: the ids of the reply's messages)
Deliver: TypeAlias = Callable[[ChatAnswer | Exception], Generator[D, Any, Any]]


@attrs.frozen
class TurnRequest:
    """A question asked in a conversation on ``channel`` (``chat``, ``openai``, a text
    channel, ``voice``), by ``participant`` (kept only as a hash).

    The conversation is the one the client named (``conversation_id``: unknown is a 404,
    never a new conversation), the one taking place at ``place`` (a chat or a call: its
    ``place_key``) while its last turn is under ``idle_minutes`` old (0: however old), or
    else the one whose exchanges are the history the client sent with the question
    (``request.history``, the OpenAI protocol; none: the turn begins a conversation).
    ``turn``: its number in the conversation, when the channel numbers them (a call);
    ``reply_to``: where a person's message reaches the customer (their chat, their
    number), kept with a customer's conversation. ``api_key_id``: the API key that asks
    (a conversation the turn begins is its); with ``own_conversations_only`` (a chat key),
    only a conversation asked with it is continued, any other is unknown."""

    request: ChatRequest
    channel: str
    participant: str | None = None
    conversation_id: int | None = None
    place: str | None = None
    idle_minutes: int = IDLE_MINUTES
    turn: int | None = None
    reply_to: dict[str, Any] | None = None
    api_key_id: int | None = None
    own_conversations_only: bool = False

    @property
    def customer(self) -> bool:
        """Whether a customer asks: then a person can take the conversation over."""
        return self.channel in HANDOFF_CHANNELS and self.conversation_id is None

    @property
    def history_sent(self) -> bool:
        """Whether the client sends the history itself (then it is the one used)."""
        return self.conversation_id is None and self.place is None

    def loading(self) -> LoadConversation:
        own = self.api_key_id if self.own_conversations_only else None
        if self.conversation_id is not None:
            return LoadConversation(
                self.channel, conversation_id=self.conversation_id, api_key_id=own
            )
        if self.place is not None:
            return LoadConversation(self.channel, self.place, self.idle_minutes, api_key_id=own)
        return LoadConversation(self.channel, continuation(self.request.history), 0, api_key_id=own)


@attrs.frozen
class TurnOutcome:
    """The answer, with the id of the conversation it was recorded in (None: it could
    not be recorded), what went wrong on the way without stopping it, and what the
    channel's delivery step returned (``Deliver``; None without one)."""

    answer: ChatAnswer
    failures: tuple[Exception, ...] = ()
    delivered: Any = None


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
    mode = yield from _mode_now(turn, ongoing, policy, failures)
    handing_off: str | None = None  # why this turn hands the conversation to a person
    if mode == "human":  # a person answers: the AI stays silent, the message is kept
        answer = held(request)
    elif turn.customer and (reason := _asks_for_person(request)) is not None:
        handing_off, language = reason
        answer = yield from _handoff_answer(turn, request, language, policy)
    else:
        try:
            answer = yield from answer_question(request, policy)
        except Exception as error:
            failures += (yield from _deliver(deliver, error))[1]
            failures += (yield from _record(turn, request, None, ongoing))[1]
            _note(error, failures)
            raise
        refusals = ongoing.refusals if ongoing is not None else 0
        if turn.customer and (why := _rule_hands_off(answer, refusals, policy)) is not None:
            handing_off = why
            notice = yield from _handoff_answer(turn, request, answer.language, policy)
            answer = attrs.evolve(
                answer, answer=f"{answer.answer}\n\n{notice.answer}".strip(), mode="human"
            )
    delivered, undelivered = yield from _deliver(deliver, answer)
    recorded, unrecorded = yield from _record(turn, request, answer, ongoing)
    failures += unrecorded
    if recorded is not None:
        if handing_off is not None:
            failures += yield from _hand_over(turn, recorded.conversation_id, handing_off)
        elif answer.held:
            failures += yield from _pass_on(turn, recorded.conversation_id, request.question)
    if undelivered:  # the asker never saw it; it is recorded all the same
        raise _note(undelivered[0], failures)
    if recorded is not None:
        answer = attrs.evolve(answer, conversation_id=recorded.conversation_id, turn=recorded.turn)
    return TurnOutcome(answer, tuple(failures), delivered)


def held(request: ChatRequest) -> ChatAnswer:
    """No AI answer: a person answers this conversation; the message waits for them."""
    return ChatAnswer("", (), role=request.role, provider=None, model=None, mode="human", held=True)


def _mode_now(
    turn: TurnRequest, ongoing: Ongoing | None, policy: ChatPolicy, failures: list[Exception]
) -> Generator[MoveMode, Any, str]:
    """The conversation's mode for this turn: a conversation with a person nobody wrote
    in for HANDOFF_IDLE_MINUTES goes back to the AI first."""
    if not turn.customer or ongoing is None or ongoing.conversation_id is None:
        return "ai"
    if ongoing.mode == "human" and timed_out(
        ongoing.last_message_at, ongoing.started, policy.handoff.idle_minutes
    ):
        detail = f"nobody wrote for {policy.handoff.idle_minutes} minutes"
        try:
            yield MoveMode(ongoing.conversation_id, "ai", TIMEOUT, detail, ("human",))
        except Exception as error:  # the AI answers all the same
            failures.append(error)
        return "ai"
    return ongoing.mode


def _asks_for_person(request: ChatRequest) -> tuple[str, str] | None:
    """Why this question hands the conversation to a person, and the language to say so
    in: the customer asks for one."""
    language = asks_for_person(request.question)
    if language is not None:
        return "the customer asked for a person", language
    return None


def _rule_hands_off(answer: ChatAnswer, refusals: int, policy: ChatPolicy) -> str | None:
    """Why the AI's ``answer`` hands the conversation to a person: its grounded refusal is
    the HANDOFF_AFTER_REFUSALS-th in a row, or a sensitive role's answer failed its
    grounding check (a person answers rather than a caveat)."""
    after = policy.handoff.after_refusals
    if refusals_hand_off(refusals, turn_outcome(answer) == "not_found", after):
        return f"the AI found no answer {after} times in a row"
    if answer.grounded is False:
        return "a sensitive role's answer was not supported by the documents"
    return None


def _handoff_answer(
    turn: TurnRequest, request: ChatRequest, language: str | None, policy: ChatPolicy
) -> Generator[LoadBusiness, Any, ChatAnswer]:
    """The AI's last answer before a person takes over: what happens now."""
    try:
        business: Business = yield LoadBusiness()
    except Exception:  # the notice is said all the same, without the name and hours
        business = Business()
    phone = turn.channel == "voice"
    text = handoff_notice(language, business, phone=phone, transfer=policy.handoff.transfer)
    return ChatAnswer(
        text,
        (),
        role=request.role,
        provider=None,
        model=None,
        language=language or None,
        mode="human",
    )


def _hand_over(
    turn: TurnRequest, conversation_id: int, why: str
) -> Generator[MoveMode | NotifyOwnerOfHandoff, Any, list[Exception]]:
    """Move the conversation to a person and tell the owner."""
    by = CUSTOMER if why.startswith("the customer") else RULE
    try:
        moved = yield MoveMode(conversation_id, "human", by, why, ("ai",))
        if moved:
            yield NotifyOwnerOfHandoff(conversation_id, turn.channel, why)
    except Exception as error:
        return [error]
    return []


def _pass_on(
    turn: TurnRequest, conversation_id: int, message: str
) -> Generator[NotifyOwnerOfHandoff, Any, list[Exception]]:
    """A customer's new message while a person answers: passed on to the owner."""
    try:
        yield NotifyOwnerOfHandoff(conversation_id, turn.channel, message=message)
    except Exception as error:
        return [error]
    return []


def _note(error: Exception, failures: list[Exception]) -> Exception:
    """``error``, with what else went wrong noted on it (for the driver's log)."""
    for failure in failures:
        error.add_note(f"also, on the way: {type(failure).__name__}: {failure}")
    return error


def _deliver(
    deliver: Deliver[D] | None, outcome: ChatAnswer | Exception
) -> Generator[D, Any, tuple[Any, list[Exception]]]:
    """What the delivery step returned, or what went wrong."""
    if deliver is None:
        return None, []
    try:
        delivered = yield from deliver(outcome)
    except Exception as error:  # the turn is still recorded
        return None, [error]
    return delivered, []


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
        reply_to=turn.reply_to,
        api_key_id=turn.api_key_id,
    )
    try:
        recorded: RecordedTurn = yield RecordTurn(record)
    except Exception as error:  # the asker has their answer; the driver's log says it
        return None, [error]
    return recorded, []
