"""Effects the action pipelines yield (see ``ragcore.effects`` for the pattern);
``ragio.actions.handlers`` executes them. Each names its result's type and documents it."""

from __future__ import annotations

from datetime import datetime

import attrs

from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.lifecycle import Move
from ragcore.actions.records import ActionRecord
from ragcore.effects import Effect


@attrs.frozen
class LoadAutonomy(Effect[AutonomyConfig]):
    """The stored autonomy setting. Result: ``ragcore.actions.autonomy.AutonomyConfig``."""

    runs_ahead = True


@attrs.frozen
class NewTicket(Effect["Ticket"]):
    """A fresh action id (from ``os.urandom``, see ``approvals.approval_id``) and the
    current UTC time. Result: ``Ticket``."""


@attrs.frozen
class Ticket:
    id: str
    now: datetime


@attrs.frozen
class SaveAction(Effect[None]):
    """Store a new action and its first log ``event``. Result: None."""

    record: ActionRecord
    event: str
    detail: str


@attrs.frozen
class LoadAction(Effect[ActionRecord | None]):
    """The action with this id. Result: ``ActionRecord`` or None."""

    action_id: str


@attrs.frozen
class ClaimAction(Effect[ActionRecord | None]):
    """Apply ``move`` (a decision on a pending action, ``ragcore.actions.lifecycle``) at
    ``now``, decided by ``by``, logging the move's event: atomically, and only when the
    action is still in ``move.before`` and (``before_expiry``) not expired at ``now``, so
    an id is decided once however many YES arrive at the same time. Result: the updated
    ``ActionRecord``, or None when it was not pending any more."""

    action_id: str
    move: Move
    now: datetime
    by: str
    detail: str = ""
    before_expiry: bool = True


@attrs.frozen
class FinishAction(Effect[ActionRecord]):
    """Apply ``move`` (the send's end: ``executed`` or ``failed``) with ``detail`` as the
    reason, logged, to the action while it is still in ``move.before``. Result: the
    ``ActionRecord`` as it then is."""

    action_id: str
    move: Move
    detail: str


@attrs.frozen
class ExpireOverdue(Effect[list[str]]):
    """Apply ``move`` (``lifecycle.EXPIRE``) at ``now`` to every pending action whose
    ``expires_at`` has passed, decided by ``by``, logging ``detail``. Result: their ids."""

    move: Move
    now: datetime
    by: str
    detail: str


@attrs.frozen
class FailInterrupted(Effect[list[str]]):
    """Apply ``move`` (``lifecycle.INTERRUPT``) at ``now`` to every action that started
    sending at ``started_before`` or earlier, with ``reason``, logged. Result: their ids."""

    move: Move
    now: datetime
    started_before: datetime
    reason: str


@attrs.frozen
class NoteAction(Effect[None]):
    """Add a log ``event`` to an action without changing it. Result: None."""

    action_id: str
    event: str
    detail: str


@attrs.frozen
class PerformAction(Effect["Sent"]):
    """Send the action (webhook, e-mail or chat-ops). Never raises. Result: ``Sent``."""

    record: ActionRecord


@attrs.frozen
class NotifyOwner(Effect["Sent"]):
    """Message the owner at ``target`` on ``channel``. Never raises. Result: ``Sent``."""

    channel: str
    target: str
    text: str


@attrs.frozen
class Sent:
    """How a send turned out: ``ok`` only when the other side accepted it."""

    ok: bool
    detail: str = ""
