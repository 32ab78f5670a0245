"""Effects the channel conversation pipeline (``ragcore.channels.conversation``) yields.
``ragio.channels.handlers`` executes them. Each names its result's type and documents
it."""

from __future__ import annotations

from typing import Any

import attrs

from ragcore.channels.messages import InboundMessage
from ragcore.effects import Effect
from ragcore.employees.roles import Role


@attrs.frozen
class SendReply(Effect[None]):
    """Send ``parts`` (each within the platform's limit), in order, in reply to
    ``message`` on its channel. Result: None; raises when the platform did not take one."""

    message: InboundMessage
    parts: tuple[str, ...]


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
