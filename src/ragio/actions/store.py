"""SQL for the autonomy setting, actions and their log. Every value is bound as a
parameter, never formatted. A status changes only as a ``ragcore.actions.lifecycle``
move says, and only from the move's ``before`` status (WHERE status = …), so of two
deciders racing on one action one wins."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.kinds import action_json
from ragcore.actions.lifecycle import Move
from ragcore.actions.records import ActionRecord, LogEntry, action_from_row

_COLUMNS = (
    "id, action, origin, status, created_at, role, reason, expires_at, decided_at, "
    "decided_by, finished_at"
)
_SELECT = f"SELECT {_COLUMNS} FROM actions"


def _record(row: Sequence[Any]) -> ActionRecord:
    return ActionRecord(row[0], action_from_row(row[1]), *row[2:])


# ---------------------------------------------------------------- autonomy


def load_autonomy(conn: psycopg.Connection) -> AutonomyConfig:
    row = conn.execute(
        """SELECT mode, approval_channel, approval_target, allowed_kinds, sensitive_roles,
                  updated_at
             FROM autonomy_settings"""
    ).fetchone()
    return AutonomyConfig(*row) if row else AutonomyConfig()


def save_autonomy(conn: psycopg.Connection, config: AutonomyConfig) -> AutonomyConfig:
    row = conn.execute(
        """INSERT INTO autonomy_settings
               (mode, approval_channel, approval_target, allowed_kinds, sensitive_roles,
                updated_at)
           VALUES (%s, %s, %s, %s, %s, now())
           ON CONFLICT (only_row) DO UPDATE
              SET mode = EXCLUDED.mode, approval_channel = EXCLUDED.approval_channel,
                  approval_target = EXCLUDED.approval_target,
                  allowed_kinds = EXCLUDED.allowed_kinds,
                  sensitive_roles = EXCLUDED.sensitive_roles, updated_at = now()
           RETURNING mode, approval_channel, approval_target, allowed_kinds, sensitive_roles,
                     updated_at""",
        (
            config.mode,
            config.approval_channel,
            config.approval_target,
            list(config.allowed_kinds),
            config.sensitive_roles,
        ),
    ).fetchone()
    return AutonomyConfig(*row)


# ---------------------------------------------------------------- actions


def _log(conn: psycopg.Connection, action_id: str, event: str, detail: str, at: Any) -> None:
    conn.execute(
        """INSERT INTO action_log (action_id, at, event, detail)
           VALUES (%s, COALESCE(%s::timestamptz, now()), %s, %s)""",
        (action_id, at, event, detail),
    )


def save_action(conn: psycopg.Connection, record: ActionRecord, event: str, detail: str) -> None:
    with conn.transaction():
        conn.execute(
            f"""INSERT INTO actions ({_COLUMNS}, kind)
                VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            (
                record.id,
                json.dumps(action_json(record.action), ensure_ascii=False),
                record.origin,
                record.status,
                record.created_at,
                record.role,
                record.reason,
                record.expires_at,
                record.decided_at,
                record.decided_by,
                record.finished_at,
                record.kind,
            ),
        )
        _log(conn, record.id, event, detail, record.created_at)


def load_action(conn: psycopg.Connection, action_id: str) -> ActionRecord | None:
    row = conn.execute(f"{_SELECT} WHERE id = %s", (action_id,)).fetchone()
    return _record(row) if row else None


def claim_action(
    conn: psycopg.Connection,
    action_id: str,
    move: Move,
    now: datetime,
    by: str,
    detail: str,
    before_expiry: bool,
) -> ActionRecord | None:
    """Apply ``move`` to the action while it is in ``move.before`` (and, with
    ``before_expiry``, not expired at ``now``); only one caller ever wins (see
    ClaimAction)."""
    with conn.transaction():
        row = conn.execute(
            f"""UPDATE actions
                   SET status = %(after)s, decided_at = %(now)s, decided_by = %(by)s,
                       finished_at = CASE WHEN %(final)s THEN %(now)s END
                 WHERE id = %(id)s AND status = %(before)s
                   AND (NOT %(before_expiry)s OR expires_at > %(now)s)
             RETURNING {_COLUMNS}""",
            {
                "after": move.after,
                "before": move.before,
                "final": move.final,
                "now": now,
                "by": by,
                "id": action_id,
                "before_expiry": before_expiry,
            },
        ).fetchone()
        if row is None:
            return None
        _log(conn, action_id, move.event, detail, now)
        return _record(row)


def finish_action(
    conn: psycopg.Connection, action_id: str, move: Move, detail: str
) -> ActionRecord:
    """Apply ``move`` with ``detail`` as the reason while the action is in ``move.before``
    (a stop may have failed it as interrupted meanwhile: then it stays so); logged
    either way. The action as it then is."""
    with conn.transaction():
        row = conn.execute(
            f"""UPDATE actions SET status = %s, reason = %s, finished_at = now()
                 WHERE id = %s AND status = %s RETURNING {_COLUMNS}""",
            (move.after, detail, action_id, move.before),
        ).fetchone()
        if row is None:
            row = conn.execute(f"{_SELECT} WHERE id = %s", (action_id,)).fetchone()
        _log(conn, action_id, move.event, detail, None)
    return _record(row)


def note_action(conn: psycopg.Connection, action_id: str, event: str, detail: str) -> None:
    _log(conn, action_id, event, detail, None)


def expire_overdue(
    conn: psycopg.Connection, move: Move, now: datetime, by: str, detail: str
) -> list[str]:
    """Apply ``move`` to every action in ``move.before`` past its expiry (logged); their
    ids."""
    with conn.transaction():
        rows = conn.execute(
            """UPDATE actions SET status = %(after)s, decided_at = %(now)s,
                      decided_by = %(by)s, finished_at = %(now)s
                WHERE status = %(before)s AND expires_at <= %(now)s
            RETURNING id""",
            {"after": move.after, "before": move.before, "now": now, "by": by},
        ).fetchall()
        for (action_id,) in rows:
            _log(conn, action_id, move.event, detail, now)
    return [action_id for (action_id,) in rows]


def fail_interrupted(
    conn: psycopg.Connection, move: Move, now: datetime, since: datetime, reason: str
) -> list[str]:
    """Apply ``move`` with ``reason`` to every action in ``move.before`` since ``since`` or
    earlier (logged); their ids."""
    with conn.transaction():
        rows = conn.execute(
            """UPDATE actions SET status = %(after)s, reason = %(reason)s, finished_at = %(now)s
                WHERE status = %(before)s AND decided_at <= %(since)s
            RETURNING id""",
            {
                "after": move.after,
                "before": move.before,
                "reason": reason,
                "now": now,
                "since": since,
            },
        ).fetchall()
        for (action_id,) in rows:
            _log(conn, action_id, move.event, reason, now)
    return [action_id for (action_id,) in rows]


def pending_actions(conn: psycopg.Connection, now: datetime) -> list[ActionRecord]:
    """The actions waiting for the owner at ``now``, oldest first."""
    rows = conn.execute(
        f"{_SELECT} WHERE status = 'pending' AND expires_at > %s ORDER BY created_at, id",
        (now,),
    ).fetchall()
    return [_record(row) for row in rows]


def action_log(
    conn: psycopg.Connection, limit: int, before: int | None, action_id: str | None
) -> list[LogEntry]:
    """Log entries, newest first: at most ``limit``, with ids below ``before``, of one
    action when ``action_id`` is given."""
    prefixed = ", ".join(f"a.{c.strip()}" for c in _COLUMNS.split(","))
    rows = conn.execute(
        f"""SELECT l.id, l.action_id, l.at, l.event, l.detail, {prefixed}
              FROM action_log l JOIN actions a ON a.id = l.action_id
             WHERE (%(before)s::bigint IS NULL OR l.id < %(before)s::bigint)
               AND (%(action)s::text IS NULL OR l.action_id = %(action)s::text)
             ORDER BY l.id DESC
             LIMIT %(limit)s""",
        {"before": before, "action": action_id, "limit": limit},
    ).fetchall()
    return [LogEntry(*row[:5], _record(row[5:])) for row in rows]
