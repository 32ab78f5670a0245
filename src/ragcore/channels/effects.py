"""Effects the channel conversation pipeline (``ragcore.channels.conversation``) yields.
``ragio.channels.handlers`` executes them. Each names its result's type and documents
it."""

from __future__ import annotations

from typing import Any

import attrs

from ragcore.channels.messages import ButtonPress, InboundMessage
from ragcore.effects import Effect
from ragcore.employees.roles import Role


@attrs.frozen
class SendReply(Effect[tuple[str, ...]]):
    """Send ``parts`` (each within the platform's limit), in order, in reply to
    ``message`` on its channel. Result: the platform's ids of the messages sent, in order
    (none when the platform gives none); raises when the platform did not take one."""

    message: InboundMessage
    parts: tuple[str, ...]


@attrs.frozen
class OfferRating(Effect[None]):
    """Put the rating buttons naming turn ``turn`` of conversation ``conversation_id``
    under the message ``sent`` (the id the platform gave the reply's last part) in
    ``message``'s chat. Result: None; never raises (a platform's refusal is logged: the
    answer stands without them)."""

    message: InboundMessage
    sent: str
    conversation_id: int
    turn: int


@attrs.frozen
class RateInChat(Effect[bool]):
    """Rate turn ``turn`` of conversation ``conversation_id`` ``rating`` (up or down), if
    it is an AI answer in the conversation taking place in ``chat`` on ``channel``.
    Result: whether it was rated (False: no such answer in that chat)."""

    channel: str
    chat: str
    conversation_id: int
    turn: int
    rating: str


@attrs.frozen
class AnswerPress(Effect[None]):
    """Answer the button press ``press`` with ``text``, a short notice the platform shows
    the presser. Result: None; never raises (a refusal is logged)."""

    press: ButtonPress
    text: str


@attrs.frozen
class ShowRating(Effect[None]):
    """Show under the pressed message that ``rating`` was chosen for turn ``turn`` of
    conversation ``conversation_id`` (its buttons again, the chosen one marked). Result:
    None; never raises (a refusal is logged)."""

    press: ButtonPress
    conversation_id: int
    turn: int
    rating: str


@attrs.frozen
class LoadRoles(Effect[list[Role]]):
    """The roles stored. Result: a list of ``ragcore.employees.roles.Role``."""


@attrs.frozen
class MarkAnswered(Effect[None]):
    """Record that ``message``'s delivery has had its reply (or could not have one), so it
    is not taken up again at the next start. Result: None."""

    message: InboundMessage


@attrs.frozen
class FireWorkflows(Effect[None]):
    """Call the active workflows tied to ``channel`` with the message, the reply and
    ``context`` (SPEC section 6). Never raises. Result: None."""

    channel: str
    message: str
    ai_reply: str
    context: dict[str, Any]
