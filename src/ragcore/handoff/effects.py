"""Effects of the handoff pipelines (``ragcore.chat.turn``, ``ragcore.handoff.replies``);
``ragio.handoff.handlers`` executes them. Each names its result's type."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from ragcore.effects import Effect
from ragcore.handoff.notices import Business


@attrs.frozen
class MoveMode(Effect[bool]):
    """Move the conversation to mode ``to``, by ``by`` because ``detail``, writing the move
    to its ``handoff_log``; only from one of ``from_modes``. Result: True when it moved
    (False: it was in ``to`` already, or in a mode it may not leave)."""

    conversation_id: int
    to: str
    by: str
    detail: str
    from_modes: tuple[str, ...] = ("ai", "human")


@attrs.frozen
class LoadBusiness(Effect[Business]):
    """The business's name and opening hours, and the wall time in its time zone.
    Result: ``ragcore.handoff.notices.Business``."""

    runs_ahead = True


@attrs.frozen
class NotifyOwnerOfHandoff(Effect[None]):
    """Tell the owner (CHATOPS_WEBHOOK_URL, and their chat: the approval identity) that
    the conversation needs a person because ``why``, with its last messages; with
    ``message``, pass on a customer's new message instead (the owner's chat only).
    Never raises. Result: None."""

    conversation_id: int
    channel: str
    why: str = ""
    message: str | None = None


@attrs.frozen
class HandoffConversation:
    """A conversation as a person's message needs it: where it is, its mode, where the
    customer's messages go, and when it was handed to a person (None: never) and whether
    a person has written since."""

    conversation_id: int
    channel: str
    mode: str
    reply_to: dict[str, Any] | None
    handed_at: datetime | None = None
    person_wrote: bool = False


@attrs.frozen
class LoadHandoff(Effect["HandoffConversation | None"]):
    """The conversation ``conversation_id`` for a person's message. Result:
    ``HandoffConversation``, None when there is none."""

    conversation_id: int


@attrs.frozen
class Delivered:
    """How a person's message went: ``ok``, and what happened in words."""

    ok: bool
    detail: str


@attrs.frozen
class DeliverToCustomer(Effect[Delivered]):
    """Send ``parts`` to the customer on ``channel`` at ``reply_to`` (the website chat
    reads it from the conversation itself). Never raises. Result: ``Delivered``."""

    channel: str
    reply_to: dict[str, Any] | None
    parts: tuple[str, ...]


@attrs.frozen
class LogRefused(Effect[None]):
    """Write to the conversation's ``handoff_log`` that ``by`` was refused: ``detail``.
    Result: None."""

    conversation_id: int
    by: str
    detail: str


@attrs.frozen
class FindNotified(Effect["int | None"]):
    """The conversation whose owner's notification is message ``message_id`` in
    ``chat`` on ``channel``. Result: its id, None when it is none of them."""

    channel: str
    chat: str
    message_id: str


@attrs.frozen
class PersonReplied(Effect[None]):
    """A person's first message since the handoff reached the customer on ``channel``,
    ``seconds`` after it (counted in ``ragchat_handoff_first_reply_seconds``). Result:
    None."""

    channel: str
    seconds: float
