"""Which role answers a customer on a channel, and what to do with a message at all.

The roles' ``channels`` field decides: a role answers on the channels it is tied to,
``support`` by default. A customer may ask for another role by starting the message
with ``/sales`` or ``@sales`` (Telegram commands may carry the bot's name:
``/sales@shop_bot``), or through Discord's ``role`` option. Internal roles
(manager, ceo, finance, hr) never answer on a customer channel, whatever the customer
asks and whatever their ``channels`` say: they see the owner's figures and staff
matters, and a customer must not be able to talk to them by asking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from ragcore.channels.messages import InboundMessage, unreadable_reply
from ragcore.employees.roles import Role

INTERNAL_ROLES = frozenset({"manager", "ceo", "finance", "hr"})
DEFAULT_ROLE = "support"
_ADDRESSED = re.compile(r"^[/@]([A-Za-z0-9_-]{1,64})(?:@[A-Za-z0-9_]+)?(?:\s+|$)")
HELP_COMMANDS = frozenset({"start", "help"})


@attrs.frozen
class AnswerAs:
    """Answer ``question`` through the pipeline as ``role``."""

    role: Role
    question: str


@attrs.frozen
class ReplyWith:
    """Reply with fixed ``text`` without asking the pipeline; ``reason`` says why."""

    text: str
    reason: str  # "unreadable", "help" or "empty"


def customer_roles(roles: Sequence[Role], channel: str) -> list[Role]:
    """The roles a customer on ``channel`` can reach, in the given order."""
    return [r for r in roles if channel in r.channels and r.identifier not in INTERNAL_ROLES]


def default_role(roles: Sequence[Role], channel: str) -> Role | None:
    """``support`` when it is tied to the channel, else the first role tied to it, else
    ``support`` anyway (someone has to answer); None only when no role can."""
    reachable = customer_roles(roles, channel)
    for role in reachable:
        if role.identifier == DEFAULT_ROLE:
            return role
    if reachable:
        return reachable[0]
    return next((r for r in roles if r.identifier == DEFAULT_ROLE), None)


def chosen_role(roles: Sequence[Role], chosen: str | None, channel: str) -> Role | None:
    """The role the owner chose for a place on ``channel`` (a website's chat) while it
    answers customers there; else (none chosen, or it was deleted or taken off the channel
    since) the channel's ``default_role``."""
    reachable = customer_roles(roles, channel)
    return next((r for r in reachable if r.identifier == chosen), None) or default_role(
        roles, channel
    )


def split_addressed(text: str) -> tuple[str | None, str]:
    """``("sales", "the rest")`` for ``/sales the rest`` or ``@sales the rest``; the
    identifier is lowercased. ``(None, text)`` when the text is not addressed."""
    match = _ADDRESSED.match(text.strip())
    if match is None:
        return None, text.strip()
    return match.group(1).lower(), text.strip()[match.end() :].strip()


def plan_reply(message: InboundMessage, roles: Sequence[Role]) -> AnswerAs | ReplyWith:
    """What to do with ``message``: answer it as a role, or reply with a fixed text."""
    if message.kind == "empty":
        return ReplyWith(help_text(roles, message.channel), "empty")
    if not message.readable:
        return ReplyWith(unreadable_reply(message.kind), "unreadable")
    addressed, question = split_addressed(message.text)
    if addressed in HELP_COMMANDS:
        if not question:
            return ReplyWith(help_text(roles, message.channel), "help")
        addressed = None  # "/start what are your hours?": the question after it
    elif addressed is None:
        question = message.text.strip()
    elif not _is_role(addressed, roles):
        question = message.text.strip()  # "/etc is fine?" is a question, not an address
        addressed = None
    requested = message.requested_role or addressed
    reachable = {r.identifier: r for r in customer_roles(roles, message.channel)}
    role = reachable.get(requested or "") or default_role(roles, message.channel)
    if not question:
        return ReplyWith(help_text(roles, message.channel), "empty")
    if role is None:
        raise LookupError(f"no role can answer on {message.channel}; the support role is gone")
    return AnswerAs(role, question)


def help_text(roles: Sequence[Role], channel: str) -> str:
    """What the bot does and whom a customer can ask, for /start, /help and empty asks."""
    reachable = customer_roles(roles, channel)
    lines = [
        "Hi! Ask me anything about our business and I'll answer from our documents, "
        "with the sources I used."
    ]
    others = [r for r in reachable if r.identifier != DEFAULT_ROLE]
    if others:
        names = ", ".join(f"/{r.identifier} ({r.display_name})" for r in others)
        lines.append(f"To ask someone specific, start your message with {names}.")
    return "\n".join(lines)


def _is_role(identifier: str, roles: Sequence[Role]) -> bool:
    return any(r.identifier == identifier for r in roles) or identifier in INTERNAL_ROLES
