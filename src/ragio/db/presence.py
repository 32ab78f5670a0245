"""Which service processes run on this database: each touches its row every
``PRESENCE_SECONDS`` while it runs and removes it when it stops; one not seen for
``GONE_AFTER`` stopped without saying so (a crash, a kill, a lost machine)."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timedelta

import psycopg

PRESENCE_SECONDS = 10.0
GONE_AFTER = timedelta(seconds=60)
FORGOTTEN_AFTER = timedelta(days=1)  # rows of processes gone this long are removed


def process_name() -> str:
    """This process among all that share the database: host, pid, and a random part (a
    restarted container may reuse both)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def here(conn: psycopg.Connection, process: str, now: datetime) -> None:
    """``process`` runs at ``now``; the rows of long-gone processes are removed."""
    conn.execute(
        """INSERT INTO service_processes (name, started_at, seen_at) VALUES (%s, %s, %s)
           ON CONFLICT (name) DO UPDATE SET seen_at = EXCLUDED.seen_at""",
        (process, now, now),
    )
    conn.execute("DELETE FROM service_processes WHERE seen_at < %s", (now - FORGOTTEN_AFTER,))


def leave(conn: psycopg.Connection, process: str) -> None:
    conn.execute("DELETE FROM service_processes WHERE name = %s", (process,))


def alive(conn: psycopg.Connection, now: datetime) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM service_processes WHERE seen_at >= %s ORDER BY name",
        (now - GONE_AFTER,),
    ).fetchall()
    return [name for (name,) in rows]
