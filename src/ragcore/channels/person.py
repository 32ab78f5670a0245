"""A person's message to a customer (docs/handoff.md), from the console, the API or the
owner's reply in Telegram: the conversation is taken over when the AI still answers it,
the message is delivered on the customer's channel and recorded as the person's turn.

And the owner's chat: a reply to a handoff notification is read here
(``owner_reply_in_chat``): only the approval identity may write through it, exactly as
for approvals; anyone else is refused, and the refusal is in the conversation's log.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any, TypeAlias

import attrs

from ragcore.actions.approvals import same_sender
from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.effects import LoadAutonomy
from ragcore.channels import discord, telegram, whatsapp
from ragcore.channels.replies import split_text
from ragcore.chat.history import RecordedTurn, RecordTurn, TurnRecord
from ragcore.errors import check_text
from ragcore.handoff.effects import (
    Delivered,
    DeliverToCustomer,
    FindNotified,
    HandoffConversation,
    LoadHandoff,
    LogRefused,
    MoveMode,
    PersonReplied,
)
from ragcore.handoff.modes import owner_refusal, write_refusal

#: a person's message, at most (the widget's own limit on a visitor's question is 4,000)
MAX_MESSAGE_CHARS = 4000
#: characters per part on each channel (the website chat takes a message whole)
_LIMITS = {
    "telegram": telegram.LIMIT,
    "whatsapp": whatsapp.LIMIT,
    "discord": discord.LIMIT,
    "web": MAX_MESSAGE_CHARS,
}
#: what a person's message asks for
PersonEffect: TypeAlias = (
    LoadHandoff | LogRefused | MoveMode | DeliverToCustomer | RecordTurn | PersonReplied
)
#: what the owner's reply in their chat asks for
OwnerChatEffect: TypeAlias = FindNotified | LoadAutonomy | PersonEffect


class NoConversation(LookupError):
    """There is no such conversation."""


class Refused(Exception):
    """The conversation cannot take the message or the move; the message says why."""


@attrs.frozen
class PersonMessage:
    """A person's message as it went: recorded as ``turn`` (None: it could not be), and
    whether it reached the customer; ``first_reply_seconds``: when it is a person's first
    since the handoff, how long the customer had waited for it."""

    conversation_id: int
    turn: int | None
    delivered: bool
    detail: str
    mode: str = "human"
    first_reply_seconds: float | None = None
    channel: str = ""


def person_message(
    conversation_id: int, text: Any, by: str, now: datetime
) -> Generator[PersonEffect, Any, PersonMessage]:
    """Deliver ``text`` from ``by`` (``console``, ``telegram owner``) to the customer of
    the conversation and record it. NoConversation when there is none; Refused (logged in
    the conversation) when it is closed or cannot be written to."""
    text = check_text(text, "text", MAX_MESSAGE_CHARS)
    found: HandoffConversation | None = yield LoadHandoff(conversation_id)
    if found is None:
        raise NoConversation(conversation_id)
    refusal = write_refusal(found.mode, found.channel)
    if refusal is not None:
        yield LogRefused(conversation_id, by, f"a message was refused: {refusal}")
        raise Refused(refusal)
    handed_at = found.handed_at
    if found.mode == "ai":  # writing in takes the conversation over
        yield MoveMode(conversation_id, "human", by, f"{by} wrote to the customer", ("ai",))
        handed_at = now
    parts = tuple(split_text(text, _LIMITS.get(found.channel, MAX_MESSAGE_CHARS)))
    delivered: Delivered = yield DeliverToCustomer(found.channel, found.reply_to, parts)
    record = TurnRecord(
        channel=found.channel,
        conversation_id=conversation_id,
        question="",
        answer=text,
        outcome="sent" if delivered.ok else "not_delivered",
        author="person",
        person=by,
    )
    recorded: RecordedTurn = yield RecordTurn(record)
    first = None
    if not found.person_wrote and handed_at is not None and delivered.ok:
        first = max(0.0, (now - handed_at).total_seconds())
        yield PersonReplied(found.channel, first)
    return PersonMessage(
        recorded.conversation_id,
        recorded.turn,
        delivered.ok,
        delivered.detail,
        first_reply_seconds=first,
        channel=found.channel,
    )


def owner_move(
    conversation_id: int, to: str, by: str, reason: str = ""
) -> Generator[LoadHandoff | MoveMode | LogRefused, Any, str]:
    """The owner moves the conversation to ``to`` (``human``: takes it over; ``ai``: hands
    it back; ``closed``); its mode after. NoConversation, or Refused when it is closed."""
    found: HandoffConversation | None = yield LoadHandoff(conversation_id)
    if found is None:
        raise NoConversation(conversation_id)
    refusal = owner_refusal(found.mode, to)
    if refusal is not None:
        yield LogRefused(conversation_id, by, f"a move to {to} was refused: {refusal}")
        raise Refused(refusal)
    detail = reason.strip() or _MOVED_BY_OWNER[to]
    yield MoveMode(conversation_id, to, by, detail, ("ai", "human"))
    return to


_MOVED_BY_OWNER = {
    "human": "the owner took over",
    "ai": "the owner handed back to the AI",
    "closed": "the owner closed it",
}
#: what the owner may reply to a notification besides a message to the customer
_COMMANDS = {"/ai": "ai", "/close": "closed", "/human": "human"}


@attrs.frozen
class OwnerChatReply:
    """What a message in reply to a handoff notification came to: ``reply``, what the
    sender is told (None: the message is no such reply, it goes on as any message)."""

    reply: str | None = None
    refused: bool = False


def owner_reply_in_chat(
    channel: str, chat: str, sender: str, replied_to: str | None, text: str, now: datetime
) -> Generator[OwnerChatEffect, Any, OwnerChatReply]:
    """Read ``text`` from ``sender`` in ``chat``, a reply to message ``replied_to``: when
    that message is a handoff notification, the owner's message to the customer (or
    ``/ai``, ``/close``). From anyone but the approval identity, refused and logged; the
    message then goes on as any other (the sender learns nothing of the conversation)."""
    if not replied_to:
        return OwnerChatReply()
    conversation_id: int | None = yield FindNotified(channel, chat, replied_to)
    if conversation_id is None:
        return OwnerChatReply()
    autonomy: AutonomyConfig = yield LoadAutonomy()
    if not same_sender(autonomy, channel, sender):
        detail = f"a reply from a {channel} sender who is not the owner was refused"
        yield LogRefused(conversation_id, f"{channel} stranger", detail)
        return OwnerChatReply(refused=True)
    by = f"{channel} owner"
    command = _COMMANDS.get(text.strip().lower())
    try:
        if command is not None:
            mode = yield from owner_move(conversation_id, command, by)
            return OwnerChatReply(f"Conversation {conversation_id} is now: {_SHOWN[mode]}.")
        sent = yield from person_message(conversation_id, text, by, now)
    except Refused as refused:
        return OwnerChatReply(f"Not sent: {refused}.")
    except NoConversation:
        return OwnerChatReply(f"Conversation {conversation_id} no longer exists.")
    if sent.delivered:
        return OwnerChatReply(f"Sent to the customer (conversation {conversation_id}).")
    return OwnerChatReply(f"Recorded, but not delivered: {sent.detail}")


_SHOWN = {"ai": "answered by the AI", "human": "yours to answer", "closed": "closed"}
