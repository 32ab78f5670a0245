"""Versioned SQL migrations, applied at start-up under a PostgreSQL advisory lock.

Files ``migrations/NNN_name.sql`` are applied in order, each in its own
transaction, and recorded in ``schema_migrations``. The advisory lock makes two
processes starting together take turns: the second finds the work done.
"""

from __future__ import annotations

import logging
import re
from importlib import resources

import psycopg

log = logging.getLogger(__name__)
# Any fixed 64-bit number works; this one spells "ragchat" in ASCII.
SCHEMA_LOCK = 0x72616763686174
_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


def migration_files() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration shipped with the package, in order."""
    found = []
    for entry in resources.files("ragio.db").joinpath("migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort()
    versions = [version for version, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a version number: {versions}")
    return found


def apply_migrations(conn: psycopg.Connection) -> list[str]:
    """Apply the pending migrations; return the names applied. ``conn`` is autocommit."""
    applied_now = []
    with advisory_lock(conn):
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version    integer PRIMARY KEY,
                   name       text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, name, sql in migration_files():
            if version in done:
                continue
            with conn.transaction():
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (version, name),
                )
            log.info("applied migration %03d_%s", version, name)
            applied_now.append(f"{version:03d}_{name}")
    return applied_now


class advisory_lock:  # noqa: N801 - used as a context manager
    """Hold the schema lock on ``conn`` for the block (session-level, so it spans transactions)."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK,))

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))
