"""Effects the action pipelines yield (see ``ragcore.effects`` for the pattern);
``ragio.actions.handlers`` executes them. Each documents the result it expects."""

from __future__ import annotations

from datetime import datetime

import attrs

from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.records import ActionRecord
from ragcore.effects import Effect


@attrs.frozen
class LoadAutonomy(Effect[AutonomyConfig]):
    """The stored autonomy setting. Result: ``ragcore.actions.autonomy.AutonomyConfig``."""


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
    """Move a ``pending`` action to ``status`` at ``now`` (decided by ``by``), logging
    ``event``: atomically, and only when it is still pending and (unless the move is to
    ``expired``) not expired at ``now``, so an id is decided once however many YES arrive
    at the same time. Result: the updated ``ActionRecord``, or None when it was not
    pending any more."""

    action_id: str
    status: str
    now: datetime
    by: str
    event: str
    detail: str = ""


@attrs.frozen
class FinishAction(Effect[ActionRecord]):
    """Record the send's result: ``executed`` or ``failed`` with ``detail`` (the reason).
    Result: the updated ``ActionRecord``."""

    action_id: str
    status: str
    detail: str


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
