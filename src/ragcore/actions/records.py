"""An action as it is kept and shown: its id, where it came from, its status, and the
bodies that go out for it.

Statuses: ``refused`` (the gate or the settings said no; nothing was sent),
``pending`` (held for the owner until ``expires_at``), ``executing`` (being sent),
``executed`` (the send succeeded), ``failed`` (the send did not succeed; ``reason`` says
why), ``rejected`` (the owner said NO), ``expired`` (nobody decided in time); how one
becomes another is ``ragcore.actions.lifecycle``.
An action is reported ``executed`` only when the send succeeded. One still
``executing`` long after its send must have ended (``stale_after``) was cut off by a
stop: it is marked ``failed``, as ``INTERRUPTED``; it may or may not have arrived, so
it is never sent again on its own.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import attrs

from ragcore.actions.kinds import Action, check_action, preview
from ragcore.channel_names import CUSTOMER_CHANNELS

INTERRUPTED = (
    "interrupted: the service stopped while sending it, so it may or may not have arrived; "
    "check with the receiver before submitting it again"
)
#: origins of a customer's conversation on a public channel (a text channel, the widget)
PUBLIC_ORIGINS = frozenset(CUSTOMER_CHANNELS)


@attrs.frozen
class ActionRecord:
    id: str
    action: Action
    origin: str  # "api" (POST /actions), "chat" (POST /chat) or a channel name (as "web")
    status: str
    created_at: datetime
    role: str | None = None
    reason: str = ""
    expires_at: datetime | None = None
    decided_at: datetime | None = None
    #: "settings" or "autonomy" (a refusal), "autonomy" (full: executed at once), "api" or
    #: "<channel> owner" (the owner's YES/NO), "ttl" (expired)
    decided_by: str | None = None
    finished_at: datetime | None = None

    @property
    def kind(self) -> str:
        return self.action.kind

    @property
    def public(self) -> bool:
        """Proposed in a customer's conversation on a public channel."""
        return self.origin in PUBLIC_ORIGINS


@attrs.frozen
class LogEntry:
    """One decision or result in ``GET /autonomy/log``."""

    id: int
    action_id: str
    at: datetime
    event: str
    detail: str
    record: ActionRecord


def action_from_row(data: Any) -> Action:
    """A stored action (JSON written by ``action_json``) read back."""
    return check_action(data if isinstance(data, dict) else json.loads(data))


def webhook_body(record: ActionRecord, now: datetime) -> bytes:
    """The JSON a webhook target receives: the action's id (the same id on any retry by
    the owner's side), the target's name, the role that proposed it and its data."""
    action = record.action
    data = getattr(action, "data", {})
    body = {
        "action_id": record.id,
        "target": getattr(action, "target", None),
        "role": record.role,
        "origin": record.origin,
        "sent_at": now.isoformat(),
        "data": data,
    }
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def chatops_body(text: str) -> bytes:
    """An incoming-webhook message: ``{"text": …}`` as Slack and Mattermost read it."""
    return json.dumps({"text": text}, ensure_ascii=False).encode("utf-8")


def short_preview(record: ActionRecord, limit: int = 400) -> str:
    return preview(record.action, limit)


@attrs.frozen
class ProposedAction:
    """The action a chat answer proposed, as the answer reports it."""

    id: str
    kind: str
    status: str
    reason: str = ""

    @classmethod
    def of(cls, record: ActionRecord) -> ProposedAction:
        return cls(record.id, record.kind, record.status, record.reason)


def stale_after(timeout_seconds: float) -> timedelta:
    """How long after it started sending an action is certainly no longer being sent:
    every send is bounded by ACTIONS_TIMEOUT_SECONDS, given twice over and a minute."""
    return timedelta(seconds=2 * timeout_seconds + 60)
