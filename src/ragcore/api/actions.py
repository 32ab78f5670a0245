"""/autonomy and /actions: the autonomy setting, an action submitted, shown and logged."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import attrs

from ragcore.actions.approvals import ID_TEXT, AlreadyDecided, Approve, Expired, Reject
from ragcore.actions.autonomy import APPROVAL_CHANNELS, OWNER, SENSITIVE, AutonomyConfig, reach
from ragcore.actions.autonomy import AutonomyUpdate as AutonomyUpdate  # the body, by its rules
from ragcore.actions.kinds import (
    KINDS,
    MAX_ADDRESS_CHARS,
    MAX_BODY_CHARS,
    MAX_SUBJECT_CHARS,
    MAX_TEXT_CHARS,
    RECIPIENT,
    SUBJECT,
    TARGET_TEXT,
    Catalog,
    action_json,
    describe,
)
from ragcore.actions.lifecycle import STATUSES
from ragcore.actions.records import ActionRecord, LogEntry
from ragcore.api.problems import ProblemError
from ragcore.employees.roles import _IDENTIFIER, Autonomy
from ragcore.inputs import blank_or
from ragcore.schema import OneOf, described, text
from ragcore.schema import text as text_schema
from ragcore.settings import Settings

IDENTIFIER = _IDENTIFIER.pattern
Kind = Literal[KINDS]  # type: ignore[valid-type]
Status = Literal[STATUSES]  # type: ignore[valid-type]
ApprovalChannel = Literal[APPROVAL_CHANNELS]  # type: ignore[valid-type]
MAX_LOG_LIMIT = 500
MAX_LOG_ID = 2**62
ACTION_ID = {
    "type": "string",
    "description": "the action id: 10 letters and digits, read case-insensitively",
}


@attrs.frozen
class AutonomySetting:
    mode: Autonomy
    approval_channel: ApprovalChannel | None
    approval_target: Annotated[str | None, described(OWNER)]
    allowed_kinds: list[Kind]
    sensitive_roles: Annotated[Literal["semi", "off"], described(SENSITIVE)]
    approval_ttl_hours: Annotated[int, described(readOnly=True)]
    kinds: Annotated[
        dict[str, Any],
        described(
            "what each kind can reach under the settings (target names, never URLs)", readOnly=True
        ),
    ]
    updated_at: datetime | None

    @classmethod
    def of(cls, config: AutonomyConfig, settings: Settings) -> AutonomySetting:
        """The setting as shown, with what each kind can reach under ``settings``."""
        return cls(
            config.mode,
            config.approval_channel,
            config.approval_target,
            list(config.allowed_kinds),
            config.sensitive_roles,  # type: ignore[arg-type]
            settings.approval_ttl_hours,
            reach(Catalog.from_settings(settings)),
            config.updated_at,
        )


ROLE = "act as this role: its autonomy and sensitivity apply too"
Role = Annotated[str | None, described(ROLE, pattern=IDENTIFIER)]


@attrs.frozen
class NewWebhookAction:
    """POST data (a JSON object, at most 16 KB as JSON) to the webhook target named target
    (a NAME of WEBHOOK_TARGETS)."""

    kind: Literal["webhook"]
    target: Annotated[str, described(pattern=TARGET_TEXT)]
    data: dict[str, Any] = attrs.field(factory=dict)
    role: Role = None


@attrs.frozen
class NewEmailAction:
    """Mail subject and body (plain text) to to, one address."""

    kind: Literal["email"]
    to: Annotated[str, described(maxLength=MAX_ADDRESS_CHARS, pattern=RECIPIENT)]
    subject: Annotated[str, described(maxLength=MAX_SUBJECT_CHARS, pattern=SUBJECT)]
    body: Annotated[str, text(MAX_BODY_CHARS)]
    role: Role = None


@attrs.frozen
class NewChatopsAction:
    """Post text to the chat-ops channel (CHATOPS_WEBHOOK_URL)."""

    kind: Literal["chatops"]
    text: Annotated[str, text_schema(MAX_TEXT_CHARS)]
    role: Role = None


NEW_ACTION = OneOf(
    "NewAction",
    (NewWebhookAction, NewEmailAction, NewChatopsAction),
    "An action, by its kind: webhook, email or chatops. One the settings cannot send (no "
    "such target, e-mail not configured, a recipient not allowed) is refused (422) and "
    "recorded as refused.",
)


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

    @classmethod
    def of(cls, record: ActionRecord) -> Action:
        return cls(
            record.id,
            record.kind,
            record.status,
            record.reason,
            describe(record.action),
            action_json(record.action),
            record.role,
            record.origin,
            record.created_at,
            record.expires_at,
            record.decided_at,
            record.decided_by,
            record.finished_at,
        )


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

    @classmethod
    def of(cls, entry: LogEntry) -> ActionLogEntry:
        record = entry.record
        return cls(
            entry.id,
            entry.at,
            entry.action_id,
            entry.event,
            entry.detail,
            record.kind,
            describe(record.action),
            record.role,
            record.origin,
            record.status,
        )


@attrs.frozen
class ActionLog:
    entries: list[ActionLogEntry]
    next_before: int | None


@attrs.frozen
class ActionLogQuery:
    limit: Annotated[int, described(minimum=1, maximum=MAX_LOG_LIMIT)] = 50
    before: Annotated[
        int,
        described(
            "entries with ids below this (next_before of the last page)",
            minimum=1,
            maximum=MAX_LOG_ID,
        ),
    ] = 0
    action: Annotated[str, described("only this action's entries", pattern=blank_or(ID_TEXT))] = ""


def submitted(record: ActionRecord) -> int:
    """The status of ``POST /actions`` for the action as the gate left it: 200 executed,
    202 held for the owner; a problem naming the action when it was not sent (502) or
    refused (422 when the settings cannot reach it, 403 when the gate said no)."""
    extra = {"action_id": record.id, "action_status": record.status}
    if record.status == "failed":
        raise ProblemError(502, f"the action was not sent: {record.reason}", **extra)
    if record.status == "refused":
        status = 422 if record.decided_by == "settings" else 403
        raise ProblemError(status, f"the action was refused: {record.reason}", **extra)
    return 202 if record.status == "pending" else 200


def decided(judgement: object, record: ActionRecord | None, shown: str) -> ActionRecord:
    """The action the owner's approval or rejection of ``shown`` through the API left,
    or the problem saying why nothing changed: 409 already decided, 410 expired, 502
    approved but not sent, 404 no such pending action."""
    if isinstance(judgement, AlreadyDecided):
        raise ProblemError(
            409,
            f"action {shown} was already decided ({judgement.status}); nothing changed",
            action_id=shown,
            action_status=judgement.status,
        )
    if isinstance(judgement, Expired):
        raise ProblemError(
            410,
            f"action {shown} expired at {judgement.expires_at.isoformat()}; nothing was sent",
            action_id=shown,
            action_status="expired",
        )
    if isinstance(judgement, Approve | Reject) and record is not None:
        if record.status == "failed":
            raise ProblemError(
                502,
                f"approved, but the action was not sent: {record.reason}",
                action_id=shown,
                action_status="failed",
            )
        return record
    raise ProblemError(404, f"no pending action {shown!r}; GET /autonomy/pending lists them")
