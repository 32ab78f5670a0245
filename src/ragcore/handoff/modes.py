"""A conversation's mode and its moves (docs/handoff.md): ``ai`` (the AI answers),
``human`` (a person answers; the AI stays silent and records), ``closed`` (the customer's
next message begins a new conversation).

Only conversations with customers have a mode that moves (``HANDOFF_CHANNELS``): on the
owner's own API (/chat, /v1) there is nobody to hand over to.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from ragcore.channel_names import CUSTOMER_CHANNELS

Mode = Literal["ai", "human", "closed"]
MODES: tuple[Mode, ...] = ("ai", "human", "closed")
#: the channels whose conversations a person can take over
HANDOFF_CHANNELS = (*CUSTOMER_CHANNELS, "voice")
#: the channels a person's written message reaches (a call cannot be written to)
WRITABLE_CHANNELS = CUSTOMER_CHANNELS
#: who moves a conversation: the customer asking, a rule (refusals, a role's topic), the
#: owner (``console``, ``api``, ``telegram owner``…), or time
CUSTOMER, RULE, TIMEOUT = "customer", "rule", "timeout"


def timed_out(last_message_at: datetime | None, now: datetime, idle_minutes: int) -> bool:
    """Whether a conversation with a person, last written in at ``last_message_at``, goes
    back to the AI at ``now`` (HANDOFF_IDLE_MINUTES)."""
    return last_message_at is not None and now - last_message_at >= timedelta(minutes=idle_minutes)


CLOSED = "the conversation is closed: the customer's next message begins a new one"


def owner_refusal(current: str, to: str) -> str | None:
    """Why the owner cannot move a conversation from ``current`` to ``to``; None when
    they can (moving to where it is already is allowed and changes nothing)."""
    if current == "closed" and to != "closed":
        return CLOSED
    return None


def write_refusal(mode: str, channel: str) -> str | None:
    """Why a person cannot write into a conversation in ``mode`` on ``channel``; None
    when they can."""
    if mode == "closed":
        return CLOSED
    if channel == "voice":
        return "a phone conversation cannot be answered in writing: call the customer back"
    if channel not in WRITABLE_CHANNELS:
        return f"a conversation on {channel} has no customer to write to"
    return None


def refusals_hand_off(refusals_before: int, refused_now: bool, after: int) -> bool:
    """Whether this turn's grounded refusal (``refused_now``) is the ``after``-th in a row
    (HANDOFF_AFTER_REFUSALS; 0: never)."""
    return after > 0 and refused_now and refusals_before + 1 >= after
