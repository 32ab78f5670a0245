"""SQL for automation workflows. Every value is bound as a parameter, never formatted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ragcore.workflows.definitions import Filters, Workflow, WorkflowPatch, apply_patch

_SELECT = (
    "SELECT id, name, webhook_url, channels, is_active, created_at, updated_at "
    "FROM automation_workflows"
)
_RETURNING = "RETURNING id, name, webhook_url, channels, is_active, created_at, updated_at"


def _workflow(row: Sequence[Any]) -> Workflow:
    return Workflow(*row)


def list_workflows(conn: psycopg.Connection, filters: Filters = Filters()) -> list[Workflow]:
    """The workflows matching ``filters``, oldest first."""
    rows = conn.execute(
        f"""{_SELECT}
            WHERE (%(channel)s::text IS NULL OR %(channel)s::text = ANY (channels))
              AND (%(active)s::boolean IS NULL OR is_active = %(active)s::boolean)
            ORDER BY id""",
        {"channel": filters.channel, "active": filters.is_active},
    ).fetchall()
    return [_workflow(row) for row in rows]


def get_workflow(conn: psycopg.Connection, workflow_id: int) -> Workflow | None:
    row = conn.execute(f"{_SELECT} WHERE id = %s", (workflow_id,)).fetchone()
    return _workflow(row) if row else None


def create_workflow(conn: psycopg.Connection, new: WorkflowPatch) -> Workflow:
    row = conn.execute(
        f"""INSERT INTO automation_workflows (name, webhook_url, channels, is_active)
            VALUES (%s, %s, %s, %s) {_RETURNING}""",
        (new.name, new.webhook_url, list(new.channels or ()), new.is_active),
    ).fetchone()
    return _workflow(row)


def patch_workflow(
    conn: psycopg.Connection, workflow_id: int, patch: WorkflowPatch
) -> Workflow | None:
    """Apply ``patch`` (the row locked while merging, so two edits do not undo each other);
    None when there is no such workflow. A patch that changes nothing keeps updated_at."""
    with conn.transaction():
        row = conn.execute(f"{_SELECT} WHERE id = %s FOR UPDATE", (workflow_id,)).fetchone()
        if row is None:
            return None
        existing = _workflow(row)
        edited = apply_patch(existing, patch)
        if edited == existing:
            return existing
        row = conn.execute(
            f"""UPDATE automation_workflows
                   SET name = %s, webhook_url = %s, channels = %s, is_active = %s,
                       updated_at = now()
                 WHERE id = %s {_RETURNING}""",
            (
                edited.name,
                edited.webhook_url,
                list(edited.channels),
                edited.is_active,
                workflow_id,
            ),
        ).fetchone()
        return _workflow(row)


def delete_workflow(conn: psycopg.Connection, workflow_id: int) -> bool:
    return (
        conn.execute("DELETE FROM automation_workflows WHERE id = %s", (workflow_id,)).rowcount == 1
    )


def active_workflows(conn: psycopg.Connection) -> list[Workflow]:
    """Every active workflow; which of them fire is ragcore.workflows.matching's rule."""
    return list_workflows(conn, Filters(is_active=True))
