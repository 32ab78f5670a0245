"""/autonomy and /actions: the autonomy setting, an action submitted, shown and logged."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import attrs

from ragcore.actions.autonomy import APPROVAL_CHANNELS
from ragcore.actions.kinds import (
    _TARGET,
    KINDS,
    MAX_BODY_CHARS,
    MAX_SUBJECT_CHARS,
    MAX_TEXT_CHARS,
)
from ragcore.actions.records import STATUSES
from ragcore.api.schema import described
from ragcore.employees.roles import Autonomy

Kind = Literal[KINDS]  # type: ignore[valid-type]
Status = Literal[STATUSES]  # type: ignore[valid-type]
ApprovalChannel = Literal[APPROVAL_CHANNELS]  # type: ignore[valid-type]
MAX_LOG_LIMIT = 500
MAX_LOG_ID = 2**62
ACTION_ID = {
    "type": "string",
    "description": "the action id: 10 letters and digits, read case-insensitively",
}
OWNER = "the owner's Telegram chat id, WhatsApp number (+E.164) or Discord user id"
SENSITIVE = "what sensitive roles are held to, whatever the mode"


@attrs.frozen
class AutonomySetting:
    mode: Autonomy
    approval_channel: ApprovalChannel | None
    approval_target: str | None = described(OWNER)
    allowed_kinds: list[Kind]
    sensitive_roles: Literal["semi", "off"] = described(SENSITIVE)
    approval_ttl_hours: int = described(readOnly=True)
    kinds: dict[str, Any] = described(
        "what each kind can reach under the settings (target names, never URLs)", readOnly=True
    )
    updated_at: datetime | None


@attrs.frozen
class AutonomyUpdate:
    """The fields to change; unknown fields and values are 422, naming the allowed ones.
    approval_channel null clears the owner (decisions through the API only)."""

    mode: Autonomy = "off"
    approval_channel: ApprovalChannel | None = None
    approval_target: str | None = described(OWNER, default=None)
    allowed_kinds: list[Kind] = described(default=list)
    sensitive_roles: Literal["semi", "off"] = described(SENSITIVE, default="semi")


@attrs.frozen
class NewAction:
    """webhook: target (a NAME from WEBHOOK_TARGETS) and data; email: to, subject, body;
    chatops: text. role: act as that role (its autonomy and sensitivity apply)."""

    kind: Kind
    role: str = ""
    target: str = described(pattern=_TARGET.pattern, default="")
    data: dict[str, Any] = described(default=dict)
    to: str = described(format="email", default="")
    subject: str = described(maxLength=MAX_SUBJECT_CHARS, default="")
    body: str = described(maxLength=MAX_BODY_CHARS, default="")
    text: str = described(maxLength=MAX_TEXT_CHARS, default="")


@attrs.frozen
class Action:
    id: str
    kind: Kind
    status: Status
    reason: str
    summary: str
    action: dict[str, Any]
    role: str | None
    origin: str
    created_at: datetime
    expires_at: datetime | None
    decided_at: datetime | None
    decided_by: str | None
    finished_at: datetime | None


@attrs.frozen
class PendingActions:
    pending: list[Action]


@attrs.frozen
class ActionLogEntry:
    id: int
    at: datetime
    action_id: str
    event: str
    detail: str
    kind: Kind
    summary: str
    role: str | None
    origin: str
    status: Status


@attrs.frozen
class ActionLog:
    entries: list[ActionLogEntry]
    next_before: int | None


@attrs.frozen
class ActionLogQuery:
    limit: int = described(minimum=1, maximum=MAX_LOG_LIMIT, default=50)
    before: int = described(
        "entries with ids below this (next_before of the last page)",
        minimum=1,
        maximum=MAX_LOG_ID,
        default=0,
    )
    action: str = described("only this action's entries", default="")
