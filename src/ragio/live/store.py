"""SQL for live-data actions, their execution log and the pending questions. Every value
is bound as a parameter, never formatted."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.errors import InvalidInput
from ragcore.live.matching import LiveAction, Pending
from ragcore.live.templates import check_template

log = logging.getLogger(__name__)


@attrs.frozen
class StoredAction:
    """A stored action: ``template`` as the owner wrote it, ``kind`` its source's type."""

    id: int
    name: str
    source_id: int
    source_name: str
    kind: str
    template: Any
    triggers: list[str]
    auto_match: bool
    channels: list[str]
    description: str
    enabled: bool
    created_at: datetime
    updated_at: datetime

    def live_action(self) -> LiveAction:
        """The action as ragcore runs it, its template checked again (InvalidInput when
        it no longer passes)."""
        return LiveAction(
            self.id,
            self.name,
            self.source_id,
            self.kind,
            check_template(self.kind, self.template),
            triggers=tuple(self.triggers),
            auto_match=self.auto_match,
            channels=tuple(self.channels),
            description=self.description,
        )


_SELECT = """
SELECT a.id, a.name, a.source_id, i.name, i.source_type, a.template, a.triggers, a.auto_match,
       a.channels, a.description, a.enabled, a.created_at, a.updated_at
FROM live_actions a JOIN integrations i ON i.id = a.source_id"""


def _action(row: Sequence[Any]) -> StoredAction:
    (id_, name, source_id, source_name, kind, template, triggers, auto, channels, description,
     enabled, created, updated) = row  # fmt: skip
    return StoredAction(
        id_, name, source_id, source_name, kind, template, list(triggers), auto,
        list(channels), description, enabled, created, updated,
    )  # fmt: skip


def list_actions(conn: psycopg.Connection) -> list[StoredAction]:
    return [_action(row) for row in conn.execute(f"{_SELECT} ORDER BY a.id").fetchall()]


def get_action(conn: psycopg.Connection, action_id: int) -> StoredAction | None:
    row = conn.execute(f"{_SELECT} WHERE a.id = %s", (action_id,)).fetchone()
    return _action(row) if row is not None else None


def enabled_actions(conn: psycopg.Connection) -> tuple[LiveAction, ...]:
    """The enabled actions as ragcore runs them. One whose template no longer passes its
    check (the rules grew stricter since it was saved) is left out and logged, never run."""
    actions = []
    for row in conn.execute(f"{_SELECT} WHERE a.enabled ORDER BY a.id").fetchall():
        stored = _action(row)
        try:
            actions.append(stored.live_action())
        except InvalidInput as refused:
            log.warning("live action %s is not run: %s", stored.id, refused.message)
    return tuple(actions)


# --- the execution log ----------------------------------------------------------------


@attrs.frozen
class Run:
    """One execution, as logged: ``values_hash`` an HMAC of the bound values."""

    action_id: int | None
    action_name: str
    channel: str
    values_hash: str
    row_count: int | None
    affected: int | None
    duration_ms: int
    outcome: str
    reason: str = ""


def log_run(conn: psycopg.Connection, run: Run) -> None:
    """Log ``run``; an action deleted while it ran leaves its run unlinked, kept."""
    conn.execute(
        "INSERT INTO live_action_runs (action_id, action_name, channel, values_hash, row_count,"
        " affected, duration_ms, outcome, reason)"
        " VALUES ((SELECT id FROM live_actions WHERE id = %s), %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            run.action_id,
            run.action_name,
            run.channel,
            run.values_hash,
            run.row_count,
            run.affected,
            run.duration_ms,
            run.outcome,
            run.reason,
        ),
    )


# --- the question asked for a missing value -------------------------------------------


def take_pending(
    conn: psycopg.Connection, channel: str, asker: str, now: datetime
) -> Pending | None:
    """The question asked of ``asker`` on ``channel`` in their last turn, if not expired;
    taken away: it holds for one message only."""
    row = conn.execute(
        "DELETE FROM live_pending WHERE channel = %s AND asker = %s"
        " RETURNING action_id, missing, known, expires_at",
        (channel, asker),
    ).fetchone()
    if row is None or row[3] <= now:
        return None
    action_id, missing, known, _ = row
    return Pending(action_id, tuple(missing), tuple(sorted(known.items())))


def keep_pending(
    conn: psycopg.Connection,
    channel: str,
    asker: str,
    pending: Pending,
    now: datetime,
    expires_at: datetime,
) -> None:
    """Keep ``pending`` for the asker's next message; questions that expired go."""
    conn.execute(
        "INSERT INTO live_pending (channel, asker, action_id, missing, known, expires_at)"
        " VALUES (%s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (channel, asker) DO UPDATE SET action_id = EXCLUDED.action_id,"
        " missing = EXCLUDED.missing, known = EXCLUDED.known, expires_at = EXCLUDED.expires_at",
        (
            channel,
            asker,
            pending.action_id,
            list(pending.missing),
            Jsonb(dict(pending.values)),
            expires_at,
        ),
    )
    conn.execute("DELETE FROM live_pending WHERE expires_at <= %s", (now,))
