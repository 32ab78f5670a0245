"""The action pipelines, generators of effects (``ragcore.actions.effects``).

``submit_action``: an action from the API or a role's reply. The settings check
(``Catalog.refusal``) and the gate decide; a refusal is stored and logged, a held action
gets its id, expiry and the owner's message, an executed one is sent and its result
recorded. ``decide_action``: the owner's YES or NO on a held action, through a channel or
the API, decided once (the claim is atomic) and never after expiry; ``owner_reply``
reads it from a channel message. ``settle_stale``: what time alone decides. Every status
change is a move of ``ragcore.actions.lifecycle``.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any, TypeAlias

import attrs

from ragcore.actions.approvals import (
    BAD_ID_REPLY,
    AlreadyDecided,
    Approve,
    Expired,
    Judgement,
    Reject,
    Unknown,
    decision_reply,
    expiry,
    judge,
    normalize_id,
    owner_message,
    parse_command,
    same_sender,
)
from ragcore.actions.autonomy import ActingRole, AskOwner, AutonomyConfig, Execute, gate_action
from ragcore.actions.effects import (
    ClaimAction,
    ExpireOverdue,
    FailInterrupted,
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
from ragcore.actions.lifecycle import EXPIRE, INTERRUPT, NEW, move
from ragcore.actions.records import INTERRUPTED, ActionRecord, stale_after
from ragcore.settings import Settings

#: what sending an allowed or approved action asks for
PerformEffect: TypeAlias = PerformAction | FinishAction
#: what submitting an action asks for: the gate, then the send or the owner's question
SubmitEffect: TypeAlias = (
    LoadAutonomy | NewTicket | SaveAction | NotifyOwner | NoteAction | PerformEffect
)
#: what deciding a held action asks for
DecideEffect: TypeAlias = LoadAction | ClaimAction | PerformEffect
#: what reading a channel message as the owner's YES/NO asks for
OwnerReplyEffect: TypeAlias = LoadAutonomy | NoteAction | DecideEffect
#: what settling stale actions asks for
SettleEffect: TypeAlias = ExpireOverdue | FailInterrupted


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
) -> Generator[SubmitEffect, Any, ActionRecord]:
    """Gate ``submission`` and do what the gate says; the stored record. ``autonomy`` is
    loaded when not given."""
    if autonomy is None:
        autonomy = yield LoadAutonomy()
    ticket: Ticket = yield NewTicket()
    role = submission.role.identifier if submission.role else None
    record = ActionRecord(
        ticket.id, submission.action, submission.origin, NEW, ticket.now, role=role
    )
    refusal = policy.catalog.refusal(submission.action)
    if refusal is not None:
        record = _moved(
            record,
            "refused",
            reason=refusal,
            decided_at=ticket.now,
            decided_by="settings",
            finished_at=ticket.now,
        )
        yield SaveAction(record, "refused", refusal)
        return record
    gate = gate_action(submission.action, submission.role, autonomy)
    if isinstance(gate, Execute):
        record = _moved(record, "allowed", decided_at=ticket.now, decided_by="autonomy")
        yield SaveAction(record, "allowed", gate.why)
        return (yield from _perform(record))
    if isinstance(gate, AskOwner):
        expires = expiry(ticket.now, policy.approval_ttl_hours)
        record = _moved(record, "held", reason=gate.why, expires_at=expires)
        yield SaveAction(record, "held", gate.why)
        yield from _ask_owner(record, autonomy)
        return record
    record = _moved(
        record,
        "refused",
        reason=gate.why,
        decided_at=ticket.now,
        decided_by="autonomy",
        finished_at=ticket.now,
    )
    yield SaveAction(record, "refused", gate.why)
    return record


def _moved(record: ActionRecord, event: str, **changes: Any) -> ActionRecord:
    """``record`` after ``event``, its status as the lifecycle table says."""
    return attrs.evolve(record, status=move(record.status, event).after, **changes)


def _ask_owner(
    record: ActionRecord, autonomy: AutonomyConfig
) -> Generator[NotifyOwner | NoteAction, Any, None]:
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


def _perform(record: ActionRecord) -> Generator[PerformEffect, Any, ActionRecord]:
    sent: Sent = yield PerformAction(record)
    end = move(record.status, "executed" if sent.ok else "failed")
    detail = sent.detail or ("sent" if sent.ok else "the send failed")
    finished: ActionRecord = yield FinishAction(record.id, end, detail)
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
) -> Generator[DecideEffect, Any, Decision]:
    """Approve (``verdict`` "approve": the action is sent) or reject a held action, as
    ``by`` (``api`` or the owner's channel), at ``now``."""
    action_id = normalize_id(raw_id)
    if action_id is None:
        return Decision(None, Unknown())
    record: ActionRecord | None = yield LoadAction(action_id)
    judgement = judge(record, verdict, now)
    if isinstance(judgement, Expired) and record is not None:
        detail = f"{verdict} after expiry"
        yield ClaimAction(action_id, EXPIRE, now, "ttl", detail, before_expiry=False)
        return Decision(action_id, judgement, record)
    if not isinstance(judgement, Approve | Reject) or record is None:
        return Decision(action_id, judgement, record)
    decided = move(record.status, "approved" if isinstance(judgement, Approve) else "rejected")
    claimed: ActionRecord | None = yield ClaimAction(action_id, decided, now, by, f"by {by}")
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


@attrs.frozen
class OwnerReply:
    """What a channel message is to approvals: ``reply`` is the answer to the owner's
    YES/NO, None when the message is no approval command from the owner (it is answered
    like any other); ``stranger``: it was one from someone else, and not accepted."""

    reply: str | None = None
    stranger: bool = False


def owner_reply(
    channel: str, sender: str, text: str, now: datetime
) -> Generator[OwnerReplyEffect, Any, OwnerReply]:
    """Read ``text`` from ``sender`` on ``channel`` as the approval owner's ``YES <id>`` /
    ``NO <id>`` and decide it. A command from anyone but the sender matching
    ``approval_channel`` and ``approval_target`` is not accepted: that sender is answered
    like any customer and learns nothing about the action (not even whether it exists);
    the attempt is written to the action's log for the owner."""
    command = parse_command(text)
    if command is None:
        return OwnerReply()
    autonomy: AutonomyConfig = yield LoadAutonomy()
    if not same_sender(autonomy, channel, sender):
        if command.action_id is not None:
            yield from _note_stranger(channel, command.action_id, command.verdict)
        return OwnerReply(stranger=True)
    if command.action_id is None:
        return OwnerReply(BAD_ID_REPLY)
    decision = yield from decide_action(command.action_id, command.verdict, f"{channel} owner", now)
    return OwnerReply(decision_reply(command.action_id, decision.judgement, result_text(decision)))


def _note_stranger(
    channel: str, action_id: str, verdict: str
) -> Generator[LoadAction | NoteAction, Any, None]:
    word = "YES" if verdict == "approve" else "NO"
    try:
        record: ActionRecord | None = yield LoadAction(action_id)
        if record is not None:
            detail = f"{word} from a {channel} sender who is not the approval owner; ignored"
            yield NoteAction(action_id, "not_accepted", detail)
    except Exception:  # the log entry is a courtesy: the message goes on regardless
        return


def settle_stale(now: datetime, timeout_seconds: float) -> Generator[SettleEffect, Any, None]:
    """Before actions are shown: those held past their expiry are expired, and those still
    ``executing`` long after their send must have ended (ACTIONS_TIMEOUT_SECONDS,
    ``stale_after``) were cut off by a stop and are failed as ``INTERRUPTED``."""
    yield ExpireOverdue(EXPIRE, now, "ttl", "nobody decided before it expired")
    yield FailInterrupted(INTERRUPT, now, now - stale_after(timeout_seconds), INTERRUPTED)


__all__ = [
    "ActionPolicy",
    "AlreadyDecided",
    "Decision",
    "OwnerReply",
    "Submission",
    "decide_action",
    "owner_reply",
    "result_text",
    "settle_stale",
    "submit_action",
]
