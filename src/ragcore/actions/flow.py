"""The two action pipelines, generators of effects (``ragcore.actions.effects``).

``submit_action``: an action from the API or a role's reply. The settings check
(``Catalog.refusal``) and the gate decide; a refusal is stored and logged, a held action
gets its id, expiry and the owner's message, an executed one is sent and its result
recorded. ``decide_action``: the owner's YES or NO on a held action, through a channel or
the API, decided once (the claim is atomic) and never after expiry.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any

import attrs

from ragcore.actions.approvals import (
    AlreadyDecided,
    Approve,
    Expired,
    Judgement,
    Reject,
    Unknown,
    expiry,
    judge,
    normalize_id,
    owner_message,
)
from ragcore.actions.autonomy import ActingRole, AskOwner, AutonomyConfig, Execute, gate_action
from ragcore.actions.effects import (
    ClaimAction,
    FinishAction,
    LoadAction,
    LoadAutonomy,
    NewTicket,
    NoteAction,
    NotifyOwner,
    PerformAction,
    SaveAction,
    Sent,
    Ticket,
)
from ragcore.actions.kinds import Action, Catalog
from ragcore.actions.records import ActionRecord
from ragcore.settings import Settings


@attrs.frozen
class ActionPolicy:
    """The settings the action pipelines obey."""

    catalog: Catalog = Catalog()
    approval_ttl_hours: int = 24  # APPROVAL_TTL_HOURS
    sensitive_extra: tuple[str, ...] = ()  # SENSITIVE_ROLES_EXTRA
    reviewed_safe: tuple[str, ...] = ()  # SENSITIVE_ROLES_REVIEWED_SAFE

    @classmethod
    def from_settings(cls, settings: Settings) -> ActionPolicy:
        return cls(
            Catalog.from_settings(settings),
            settings.approval_ttl_hours,
            tuple(settings.sensitive_roles_extra),
            tuple(settings.sensitive_roles_reviewed_safe),
        )


@attrs.frozen
class Submission:
    """An action to gate: from ``role`` (None when the owner asked through the API), in a
    conversation from ``origin``."""

    action: Action
    origin: str
    role: ActingRole | None = None


def submit_action(
    submission: Submission, policy: ActionPolicy, autonomy: AutonomyConfig | None = None
) -> Generator[Any, Any, ActionRecord]:
    """Gate ``submission`` and do what the gate says; the stored record. ``autonomy`` is
    loaded when not given."""
    if autonomy is None:
        autonomy = yield LoadAutonomy()
    ticket: Ticket = yield NewTicket()
    role = submission.role.identifier if submission.role else None
    record = ActionRecord(
        ticket.id, submission.action, submission.origin, "refused", ticket.now, role=role
    )
    refusal = policy.catalog.refusal(submission.action)
    if refusal is not None:
        record = attrs.evolve(
            record,
            reason=refusal,
            decided_at=ticket.now,
            decided_by="settings",
            finished_at=ticket.now,
        )
        yield SaveAction(record, "refused", refusal)
        return record
    gate = gate_action(submission.action, submission.role, autonomy)
    if isinstance(gate, Execute):
        record = attrs.evolve(
            record, status="executing", decided_at=ticket.now, decided_by="autonomy"
        )
        yield SaveAction(record, "allowed", gate.why)
        return (yield from _perform(record))
    if isinstance(gate, AskOwner):
        expires = expiry(ticket.now, policy.approval_ttl_hours)
        record = attrs.evolve(record, status="pending", reason=gate.why, expires_at=expires)
        yield SaveAction(record, "held", gate.why)
        yield from _ask_owner(record, autonomy)
        return record
    record = attrs.evolve(
        record,
        reason=gate.why,
        decided_at=ticket.now,
        decided_by="autonomy",
        finished_at=ticket.now,
    )
    yield SaveAction(record, "refused", gate.why)
    return record


def _ask_owner(record: ActionRecord, autonomy: AutonomyConfig) -> Generator[Any, Any, None]:
    if not autonomy.owner_set:
        detail = "no approval_channel is set: decide it through POST /autonomy/pending/{id}"
        yield NoteAction(record.id, "not_notified", detail)
        return
    channel, target = str(autonomy.approval_channel), str(autonomy.approval_target)
    sent: Sent = yield NotifyOwner(channel, target, owner_message(record))
    if sent.ok:
        yield NoteAction(record.id, "notified", f"owner messaged on {channel}")
    else:
        yield NoteAction(record.id, "not_notified", f"{channel}: {sent.detail}")


def _perform(record: ActionRecord) -> Generator[Any, Any, ActionRecord]:
    sent: Sent = yield PerformAction(record)
    status = "executed" if sent.ok else "failed"
    detail = sent.detail or ("sent" if sent.ok else "the send failed")
    finished: ActionRecord = yield FinishAction(record.id, status, detail)
    return finished


@attrs.frozen
class Decision:
    """How the owner's YES/NO turned out: ``judgement`` and, after a YES, the record
    with the send's result."""

    action_id: str | None
    judgement: Judgement
    record: ActionRecord | None = None


def decide_action(
    raw_id: str, verdict: str, by: str, now: datetime
) -> Generator[Any, Any, Decision]:
    """Approve (``verdict`` "approve": the action is sent) or reject a held action, as
    ``by`` (``api`` or the owner's channel), at ``now``."""
    action_id = normalize_id(raw_id)
    if action_id is None:
        return Decision(None, Unknown())
    record: ActionRecord | None = yield LoadAction(action_id)
    judgement = judge(record, verdict, now)
    if isinstance(judgement, Expired) and record is not None and record.status == "pending":
        yield ClaimAction(action_id, "expired", now, "ttl", "expired", f"{verdict} after expiry")
        return Decision(action_id, judgement, record)
    if not isinstance(judgement, Approve | Reject):
        return Decision(action_id, judgement, record)
    approve = isinstance(judgement, Approve)
    status, event = ("executing", "approved") if approve else ("rejected", "rejected")
    claimed: ActionRecord | None = yield ClaimAction(action_id, status, now, by, event, f"by {by}")
    if claimed is None:  # decided (or expired) between the load and the claim
        again: ActionRecord | None = yield LoadAction(action_id)
        return Decision(action_id, judge(again, verdict, now), again)
    if isinstance(judgement, Reject):
        return Decision(action_id, judgement, claimed)
    return Decision(action_id, judgement, (yield from _perform(claimed)))


def result_text(decision: Decision) -> str:
    """After a YES: what happened to the send, for the owner's reply."""
    record = decision.record
    if record is None or not isinstance(decision.judgement, Approve):
        return ""
    if record.status == "executed":
        return "was sent."
    return f"was approved but the send failed: {record.reason}"


__all__ = [
    "ActionPolicy",
    "AlreadyDecided",
    "Decision",
    "Submission",
    "decide_action",
    "result_text",
    "submit_action",
]
