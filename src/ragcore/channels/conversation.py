"""Answering one message on a text channel, as a pipeline of effects
(``ragcore.channels.effects``); ``ragio.channels.conversation`` runs it in the background
after the webhook has acknowledged the delivery.

In order: the approval owner's ``YES <id>`` / ``NO <id>`` is decided and answered and
goes no further (``ragcore.actions.flow.owner_reply``); a fixed reply (help, a message
kind that cannot be read) is sent as is; anything else is a question for the role the
message chose, answered by the chat pipeline for this asker, with this channel as the
origin of any action it proposes (a customer's conversation, where an action always
meets the gate). A customer whose question could not be answered is told so rather than
left waiting. Once an AI answer's turn is recorded, the answer gets its rating buttons
where the channel has them (``ragcore.channels.rating``, which says why only then). Then
the delivery is marked answered, and after an AI answer went out the channel's workflows
are called with what they may know (no platform credential).
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any, TypeAlias

import attrs

from ragcore.actions.flow import OwnerReplyEffect, owner_reply
from ragcore.channels import discord, telegram, whatsapp
from ragcore.channels.effects import (
    FireWorkflows,
    LoadRoles,
    MarkAnswered,
    OfferRating,
    SendReply,
)
from ragcore.channels.messages import FAILED_REPLY, InboundMessage
from ragcore.channels.person import OwnerChatEffect, owner_reply_in_chat
from ragcore.channels.rating import offer_rating
from ragcore.channels.replies import render_reply, split_text
from ragcore.channels.routing import ReplyWith, plan_reply
from ragcore.chat.history import place_key
from ragcore.chat.pipeline import ChatAnswer, ChatPolicy, ChatRequest
from ragcore.chat.turn import TurnEffect, TurnRequest, take_turn
from ragcore.errors import InvalidInput

#: what answering a channel message asks for: the owner's YES/NO, the roles, the turn,
#: the replies sent and their rating buttons, the delivery marked answered, the workflows
#: called
ConverseEffect: TypeAlias = (
    OwnerReplyEffect
    | OwnerChatEffect
    | LoadRoles
    | TurnEffect
    | SendReply
    | OfferRating
    | MarkAnswered
    | FireWorkflows
)

#: UTF-16 units per message on each channel
LIMITS = {"telegram": telegram.LIMIT, "whatsapp": whatsapp.LIMIT, "discord": discord.LIMIT}


@attrs.frozen
class Handled:
    """How answering a message went, for the service log: the AI's ``answer`` and the
    ``role`` that gave it when one was sent; ``stranger`` when it was an approval command
    from someone not the owner (then answered as any message); ``failures``, what went
    wrong on the way (none of it stopped the rest)."""

    answer: ChatAnswer | None = None
    role: str | None = None
    stranger: bool = False
    failures: tuple[Exception, ...] = ()


def converse(
    message: InboundMessage, policy: ChatPolicy, now: datetime
) -> Generator[ConverseEffect, Any, Handled]:
    """Reply to ``message`` on its channel, mark its delivery answered, and after an AI
    answer call the channel's workflows. Never raises: a failure is reported in
    ``Handled.failures`` and what follows it still happens."""
    handled = Handled()
    try:
        handled = yield from _reply(message, policy, now)
    except Exception as error:  # a send failed: the customer cannot be told either
        handled = _failed(handled, error)
    try:
        yield MarkAnswered(message)
    except Exception as error:
        handled = _failed(handled, error)
    if handled.answer is None or handled.role is None or handled.answer.held:
        return handled  # no AI answer went out
    context = workflow_context(message, handled.answer, handled.role)
    try:
        yield FireWorkflows(message.channel, message.text, handled.answer.answer, context)
    except Exception as error:  # the dispatcher never raises; this does not trust that
        handled = _failed(handled, error)
    return handled


def _reply(
    message: InboundMessage, policy: ChatPolicy, now: datetime
) -> Generator[ConverseEffect, Any, Handled]:
    limit = LIMITS[message.channel]
    stranger = False
    replied_to = message.reply_via.get("replied_to")
    if message.kind == "text" and replied_to is not None:  # the owner's reply to a handoff
        in_chat = yield from owner_reply_in_chat(
            message.channel, message.conversation, message.sender, str(replied_to),
            message.text, now,
        )  # fmt: skip
        if in_chat.reply is not None:
            yield SendReply(message, tuple(split_text(in_chat.reply, limit)))
            return Handled()
        stranger = in_chat.refused
    if message.kind == "text":  # the owner's YES/NO to a held action goes no further
        decided = yield from owner_reply(message.channel, message.sender, message.text, now)
        if decided.reply is not None:
            yield SendReply(message, tuple(split_text(decided.reply, limit)))
            return Handled()
        stranger = stranger or decided.stranger
    plan = plan_reply(message, (yield LoadRoles()))
    if isinstance(plan, ReplyWith):
        yield SendReply(message, tuple(split_text(plan.text, limit)))
        return Handled(stranger=stranger)
    # the chat's conversation so far: a follow-up is read with it (ragcore.chat.followup)
    request = ChatRequest(
        plan.question,
        employee=plan.role,
        asker=asker(message),
        origin=message.channel,
        channel=message.channel,
        user_identifier=message.sender,
    )
    turn = TurnRequest(
        request,
        message.channel,
        participant=message.sender or message.conversation,
        place=place_key(message.channel, message.conversation),
        reply_to=reply_address(message),
    )
    try:
        outcome = yield from take_turn(turn, policy, deliver=lambda done: _send(message, done))
    except InvalidInput:  # the customer was told what to change; not the service's failure
        return Handled(stranger=stranger)
    except Exception as error:  # the customer was told (when a send could), and it is recorded
        return Handled(stranger=stranger, failures=(error,))
    failures = outcome.failures
    try:
        yield from offer_rating(message, outcome.answer, outcome.delivered)
    except Exception as error:  # the answer stands without its buttons
        failures = (*failures, error)
    return Handled(outcome.answer, plan.role.identifier, stranger, failures)


def _send(
    message: InboundMessage, outcome: ChatAnswer | Exception
) -> Generator[SendReply, Any, tuple[str, ...]]:
    """The reply to ``message``: the answer with its sources, or what went wrong in words
    the customer can act on (a question too long), or that it could not be answered. The
    ids of the answer's messages (none for anything else)."""
    limit = LIMITS[message.channel]
    if isinstance(outcome, ChatAnswer) and outcome.held:
        return ()  # a person answers this conversation: the AI stays silent
    if isinstance(outcome, ChatAnswer):
        parts = tuple(render_reply(outcome.answer, outcome.citations, limit))
        sent = yield SendReply(message, parts)
        return tuple(sent or ())
    if isinstance(outcome, InvalidInput):
        text = f"Sorry, I can't answer that: the question {outcome.message}."
        yield SendReply(message, tuple(split_text(text, limit)))
    else:
        yield SendReply(message, (FAILED_REPLY,))
    return ()


def _failed(handled: Handled, error: Exception) -> Handled:
    return attrs.evolve(handled, failures=(*handled.failures, error))


def reply_address(message: InboundMessage) -> dict[str, Any]:
    """Where a person's message reaches this customer later (``ragio.handoff.deliver``):
    the chat, the sender, what the platform's reply needs (the number written to, a
    Discord interaction); not the message answered."""
    kept = {k: v for k, v in message.reply_via.items() if k not in ("message_id", "replied_to")}
    return {"conversation": message.conversation, "sender": message.sender, **kept}


def asker(message: InboundMessage) -> str:
    """Who is asking, for learning: one person on one channel (kept only as a hash)."""
    return f"{message.channel}:{message.sender or message.conversation}"


def workflow_context(message: InboundMessage, answer: ChatAnswer, role: str) -> dict[str, Any]:
    """What a workflow learns besides the message and the reply: who wrote, where, which
    role answered and from which sources. No platform credential (a Discord token) is
    in it."""
    return {
        "role": role,
        "delivery_id": message.delivery_id,
        "conversation": message.conversation,
        "sender": message.sender,
        "sender_name": message.sender_name,
        "language": answer.language,
        "limited": answer.limited,
        "citations": [
            {
                "number": c.number,
                "document_id": c.document_id,
                "document_name": c.document_name,
                "live_action_id": c.live_action_id,
            }
            for c in answer.citations
        ],
    }
