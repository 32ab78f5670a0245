"""SQL for data sources and their synced records. Every value is bound as a parameter,
never formatted. Credentials come and go as the Fernet token only (never decrypted here)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg

from ragcore.api.integrations import StoredRecord, SyncState
from ragcore.integrations.records import Outcome, Progress, Row


class NameTaken(Exception):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


@attrs.frozen
class Source:
    """A stored data source: its credentials still a token."""

    id: int
    name: str
    source_type: str
    token: str
    fields: list[str]
    user_field: str
    sync_interval_minutes: int | None
    sync: SyncState
    run: int
    heartbeat: datetime | None
    created_at: datetime
    updated_at: datetime


_COLUMNS = (
    "id, name, source_type, credentials, credential_fields, user_field, "
    "sync_interval_minutes, sync_status, sync_started_at, sync_finished_at, records_seen, "
    "records_stored, records_skipped, records_removed, sync_error, sync_run, "
    "sync_heartbeat_at, created_at, updated_at"
)
_SELECT = f"SELECT {_COLUMNS} FROM integrations"


def _source(row: Sequence[Any]) -> Source:
    (id_, name, kind, token, fields, user_field, interval, status, started, finished, seen,
     stored, skipped, removed, error, run, heartbeat, created, updated) = row  # fmt: skip
    sync = SyncState(status, started, finished, seen, stored, skipped, removed, error)
    return Source(
        id_, name, kind, token, list(fields), user_field, interval, sync, run, heartbeat,
        created, updated,
    )  # fmt: skip


def due_sources(conn: psycopg.Connection, now: datetime) -> list[Source]:
    """The sources whose ``sync_interval_minutes`` has passed since their last sync ended
    (since they were added, never synced), not syncing, with no sync job waiting."""
    rows = conn.execute(
        f"""{_SELECT} AS s
            WHERE sync_interval_minutes IS NOT NULL AND sync_status <> 'syncing'
              AND coalesce(sync_finished_at, created_at)
                  + make_interval(mins => sync_interval_minutes) <= %s
              AND NOT EXISTS (SELECT 1 FROM jobs
                              WHERE kind = 'sync' AND key = s.id::text
                                AND status IN ('queued', 'running'))
            ORDER BY id""",
        (now,),
    ).fetchall()
    return [_source(row) for row in rows]


def _one(row: Sequence[Any] | None) -> Source | None:
    return _source(row) if row is not None else None


def list_sources(conn: psycopg.Connection) -> list[Source]:
    return [_source(row) for row in conn.execute(f"{_SELECT} ORDER BY id").fetchall()]


def get_source(conn: psycopg.Connection, source_id: int) -> Source | None:
    return _one(conn.execute(f"{_SELECT} WHERE id = %s", (source_id,)).fetchone())


def create_source(
    conn: psycopg.Connection,
    name: str,
    source_type: str,
    token: str,
    fields: list[str],
    user_field: str,
    interval: int | None,
) -> Source:
    try:
        with conn.transaction():
            row = conn.execute(
                f"""INSERT INTO integrations (name, source_type, credentials,
                        credential_fields, user_field, sync_interval_minutes)
                    VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}""",
                (name, source_type, token, fields, user_field, interval),
            ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise NameTaken(name) from None
    assert row is not None
    return _source(row)


def update_source(
    conn: psycopg.Connection,
    source_id: int,
    name: str,
    token: str,
    fields: list[str],
    user_field: str,
    interval: int | None,
    token_was: str,
) -> Source | None:
    """Save the edited source, when its credentials are still those it was edited from
    (``token_was``: two edits at once do not undo each other); None otherwise, or when it
    is gone."""
    try:
        with conn.transaction():
            row = conn.execute(
                f"""UPDATE integrations
                       SET name = %s, credentials = %s, credential_fields = %s,
                           user_field = %s, sync_interval_minutes = %s, updated_at = now()
                     WHERE id = %s AND credentials = %s RETURNING {_COLUMNS}""",
                (name, token, fields, user_field, interval, source_id, token_was),
            ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise NameTaken(name) from None
    return _one(row)


def delete_source(conn: psycopg.Connection, source_id: int) -> bool:
    """Delete a source; its records go with it (ON DELETE CASCADE)."""
    return conn.execute("DELETE FROM integrations WHERE id = %s", (source_id,)).rowcount == 1


# ------------------------------------------------------------------------- syncing


def claim(
    conn: psycopg.Connection, source_id: int, now: datetime, stale_before: datetime
) -> Source | None:
    """Mark the source ``syncing`` under a new run number, unless a sync holds it (one
    whose heartbeat is after ``stale_before``); None when it is held or gone."""
    with conn.transaction():
        row = conn.execute(
            f"""UPDATE integrations
                   SET sync_status = 'syncing', sync_run = sync_run + 1,
                       sync_started_at = %(now)s, sync_heartbeat_at = %(now)s,
                       sync_finished_at = NULL, records_seen = 0, records_stored = 0,
                       records_skipped = 0, records_removed = 0, sync_error = ''
                 WHERE id = %(id)s
                   AND (sync_status <> 'syncing' OR sync_heartbeat_at IS NULL
                        OR sync_heartbeat_at <= %(stale)s)
             RETURNING {_COLUMNS}""",
            {"id": source_id, "now": now, "stale": stale_before},
        ).fetchone()
    return _one(row)


def store_page(
    conn: psycopg.Connection,
    source_id: int,
    run: int,
    rows: Sequence[Row],
    progress: Progress,
    now: datetime,
) -> int | None:
    """In one transaction: upsert the page's rows as seen by ``run`` and show the progress
    on the source (a row's synced_at moves only when it changed). The number of rows
    stored, or None when ``run`` no
    longer holds the source (a later sync took it over: nothing is written)."""
    with conn.transaction():
        if not _holds(conn, source_id, run):
            return None
        if rows:  # one statement for the page (its keys are unique: prepare_page)
            conn.execute(
                """INSERT INTO integration_records
                       (integration_id, user_key, source_key, record, seen_run, synced_at)
                   SELECT %(source)s, page.user_key, page.source_key, page.record::jsonb,
                          %(run)s, %(now)s
                     FROM unnest(%(users)s::text[], %(keys)s::text[], %(records)s::text[])
                          AS page (user_key, source_key, record)
                   ON CONFLICT (integration_id, source_key) DO UPDATE
                      SET seen_run = EXCLUDED.seen_run,
                          user_key = EXCLUDED.user_key,
                          record = EXCLUDED.record,
                          synced_at = CASE
                              WHEN integration_records.record = EXCLUDED.record
                               AND integration_records.user_key = EXCLUDED.user_key
                              THEN integration_records.synced_at
                              ELSE EXCLUDED.synced_at END""",
                {
                    "source": source_id,
                    "run": run,
                    "now": now,
                    "users": [row.user_key for row in rows],
                    "keys": [row.source_key for row in rows],
                    "records": [row.text for row in rows],
                },
            )
        stored = len(rows)
        conn.execute(
            """UPDATE integrations
                  SET records_seen = %s, records_stored = records_stored + %s,
                      records_skipped = %s, sync_heartbeat_at = %s
                WHERE id = %s""",
            (progress.seen, stored, progress.skipped, now, source_id),
        )
    return stored


def _holds(conn: psycopg.Connection, source_id: int, run: int) -> bool:
    """Whether ``run`` still holds the source's sync (its row locked until the end of the
    transaction, so a takeover waits for this write)."""
    held = conn.execute(
        "SELECT 1 FROM integrations WHERE id = %s AND sync_run = %s "
        "AND sync_status = 'syncing' FOR UPDATE",
        (source_id, run),
    ).fetchone()
    return held is not None


def finish(
    conn: psycopg.Connection, source_id: int, run: int, outcome: Outcome, now: datetime
) -> Source | None:
    """End ``run``: its status and reason; after a complete read, the records it did not
    see removed. None when ``run`` no longer holds the source."""
    with conn.transaction():
        if not _holds(conn, source_id, run):
            return None
        removed = 0
        if outcome.remove_unseen:
            removed = conn.execute(
                "DELETE FROM integration_records WHERE integration_id = %s AND seen_run <> %s",
                (source_id, run),
            ).rowcount
        row = conn.execute(
            f"""UPDATE integrations
                   SET sync_status = %s, sync_error = %s, records_removed = %s,
                       sync_finished_at = %s, sync_heartbeat_at = %s
                 WHERE id = %s RETURNING {_COLUMNS}""",
            (outcome.status, outcome.error, removed, now, now, source_id),
        ).fetchone()
    return _one(row)


def records_for(
    conn: psycopg.Connection, source_id: int, user: str, after: int, limit: int
) -> list[StoredRecord]:
    rows = conn.execute(
        """SELECT id, source_key, record, synced_at FROM integration_records
            WHERE integration_id = %s AND user_key = %s AND id > %s
            ORDER BY id LIMIT %s""",
        (source_id, user, after, limit),
    ).fetchall()
    return [StoredRecord(*row) for row in rows]


# ------------------------------------------------------------------------- rekey


def tokens(conn: psycopg.Connection) -> list[tuple[int, str, str]]:
    """(id, name, token) of every source."""
    rows = conn.execute("SELECT id, name, credentials FROM integrations ORDER BY id").fetchall()
    return [(row[0], row[1], row[2]) for row in rows]


def replace_tokens(conn: psycopg.Connection, replaced: Sequence[tuple[int, str, str]]) -> int:
    """Write each ``(id, old token, new token)`` in one transaction, where the token is
    still the old one (a source edited meanwhile keeps its edit); the number written."""
    written = 0
    with conn.transaction():
        for source_id, old, new in replaced:
            written += conn.execute(
                "UPDATE integrations SET credentials = %s WHERE id = %s AND credentials = %s",
                (new, source_id, old),
            ).rowcount
    return written
