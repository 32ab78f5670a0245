"""SQL for live-data actions, their execution log and the pending questions. Every value
is bound as a parameter, never formatted."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.api.live_actions import LiveActionFields, LiveActionView, LoggedRun, template_facts
from ragcore.errors import InvalidInput
from ragcore.live.answers import LiveRun
from ragcore.live.matching import LiveAction, Pending
from ragcore.live.templates import check_template

log = logging.getLogger(__name__)
RUNS_RETENTION = timedelta(days=90)  # how long the execution log keeps a run
MAX_REASON_CHARS = 500  # of a failure's reason, in the log


class NameTaken(Exception):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


class UnknownSource(Exception):
    """The action's data source does not exist (or was deleted meanwhile)."""


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

    def fields(self) -> LiveActionFields:
        """The action as the owner set it, for a PATCH to change."""
        return LiveActionFields(
            self.name,
            self.source_id,
            self.template,
            tuple(self.triggers),
            self.auto_match,
            tuple(self.channels),
            self.description,
            self.enabled,
        )

    def view(self) -> LiveActionView:
        """As the API shows it: with its source and what its template needs."""
        facts = template_facts(self.kind, self.template)
        return LiveActionView(
            self.id,
            self.name,
            self.source_id,
            self.source_name,
            self.kind,
            self.template,
            list(facts.params),
            facts.writes,
            list(self.triggers),
            self.auto_match,
            list(self.channels),
            self.description,
            self.enabled,
            self.created_at,
            self.updated_at,
            facts.error,
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


def source_of(conn: psycopg.Connection, source_id: int) -> tuple[str, str] | None:
    """The name and kind (source_type) of data source ``source_id``; None: no such source."""
    row = conn.execute(
        "SELECT name, source_type FROM integrations WHERE id = %s", (source_id,)
    ).fetchone()
    return (row[0], row[1]) if row is not None else None


def create_action(conn: psycopg.Connection, fields: LiveActionFields) -> StoredAction:
    """Store a new action (checked: ``ragcore.api.live_actions.check_runnable``);
    NameTaken, or UnknownSource when its source is gone."""
    with _writing(fields):
        row = conn.execute(
            "INSERT INTO live_actions (name, source_id, template, triggers, auto_match,"
            " channels, description, enabled) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING id",
            _columns(fields),
        ).fetchone()
    assert row is not None
    created = get_action(conn, row[0])
    assert created is not None
    return created


def update_action(
    conn: psycopg.Connection, action_id: int, fields: LiveActionFields
) -> StoredAction | None:
    """Replace the action's fields (checked); None when it no longer exists."""
    with _writing(fields):
        row = conn.execute(
            "UPDATE live_actions SET name = %s, source_id = %s, template = %s, triggers = %s,"
            " auto_match = %s, channels = %s, description = %s, enabled = %s,"
            " updated_at = now() WHERE id = %s RETURNING id",
            (*_columns(fields), action_id),
        ).fetchone()
    return get_action(conn, row[0]) if row is not None else None


def delete_action(conn: psycopg.Connection, action_id: int) -> bool:
    """Delete an action; its runs stay in the log, unlinked (ON DELETE SET NULL)."""
    return conn.execute("DELETE FROM live_actions WHERE id = %s", (action_id,)).rowcount == 1


def _columns(fields: LiveActionFields) -> tuple[Any, ...]:
    return (
        fields.name,
        fields.source_id,
        Jsonb(fields.template),
        list(fields.triggers),
        fields.auto_match,
        list(fields.channels),
        fields.description,
        fields.enabled,
    )


@contextmanager
def _writing(fields: LiveActionFields) -> Iterator[None]:
    """The store's refusals as their exceptions."""
    try:
        yield
    except psycopg.errors.UniqueViolation:
        raise NameTaken(fields.name) from None
    except psycopg.errors.ForeignKeyViolation:
        raise UnknownSource() from None


# --- the execution log ----------------------------------------------------------------


def log_run(
    conn: psycopg.Connection, run: LiveRun, channel: str, values_hash: str, now: datetime
) -> None:
    """Log ``run`` on ``channel`` at ``now``, its values as ``values_hash`` (never the
    values); an action deleted while it ran leaves its run unlinked, kept. Runs older
    than ``RUNS_RETENTION`` are deleted on the way."""
    conn.execute("DELETE FROM live_action_runs WHERE at < %s", (now - RUNS_RETENTION,))
    conn.execute(
        "INSERT INTO live_action_runs (action_id, action_name, channel, values_hash, row_count,"
        " affected, duration_ms, outcome, reason, at)"
        " VALUES ((SELECT id FROM live_actions WHERE id = %s), %s, %s, %s, %s, %s, %s, %s, %s,"
        " %s)",
        (
            run.action_id,
            run.action_name,
            channel,
            values_hash,
            run.row_count,
            run.affected,
            run.duration_ms,
            run.outcome,
            run.reason[:MAX_REASON_CHARS],
            now,
        ),
    )


def list_runs(
    conn: psycopg.Connection, limit: int, before: int = 0, action_id: int = 0
) -> list[LoggedRun]:
    """The runs logged, newest first: ``limit`` of them, older than run ``before`` (0:
    from the newest), of ``action_id`` only (0: of every action)."""
    where, args = [], []
    if before:
        where.append("id < %s")
        args.append(before)
    if action_id:
        where.append("action_id = %s")
        args.append(action_id)
    sql = (
        "SELECT id, action_id, action_name, channel, values_hash, row_count, affected,"
        " duration_ms, outcome, reason, at FROM live_action_runs"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY id DESC LIMIT %s"
    )
    return [LoggedRun(*row) for row in conn.execute(sql, (*args, limit)).fetchall()]


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
