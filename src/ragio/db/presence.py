"""Which service processes run on this database: each touches its row every
``PRESENCE_SECONDS`` while it runs and removes it when it stops; one not seen for
``GONE_AFTER`` stopped without saying so (a crash, a kill, a lost machine). A process
that starts ends at once the rows of its own earlier incarnations on the same machine
(``end_previous``), so what a quickly restarted process held is taken over at once."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
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


def pid_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (in this process's PID namespace); a
    zombie, killed and not yet reaped, does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[:1] != ["Z"]
    except OSError:  # no /proc (or it went meanwhile): kill(0) said it ran
        return True


def end_previous(
    conn: psycopg.Connection,
    process: str,
    running: Callable[[int], bool] = pid_running,
) -> list[str]:
    """End the presence of the earlier incarnations of ``process`` (a name from
    ``process_name``): rows of its machine (host name) whose process no longer runs
    there, or has this process's own pid (a restarted container reuses it); their
    deliveries are then taken over at once rather than after ``GONE_AFTER``. The
    processes that share a host name share its PIDs (one machine, container or pod).
    The names ended."""
    host, _, rest = process.rpartition(":")[0].rpartition(":")
    own_pid = int(rest)
    rows = conn.execute(
        "SELECT name FROM service_processes WHERE left(name, %s) = %s AND name <> %s",
        (len(host) + 1, f"{host}:", process),
    ).fetchall()
    ended = []
    for (name,) in rows:
        pid = name[len(host) + 1 :].partition(":")[0]
        if not pid.isdigit() or name.count(":") != process.count(":"):
            continue  # another host whose name begins with this one's and a colon
        if int(pid) == own_pid or not running(int(pid)):
            ended.append(name)
    if ended:
        conn.execute("DELETE FROM service_processes WHERE name = ANY(%s)", (ended,))
    return ended


def leave(conn: psycopg.Connection, process: str) -> None:
    conn.execute("DELETE FROM service_processes WHERE name = %s", (process,))


def alive(conn: psycopg.Connection, now: datetime) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM service_processes WHERE seen_at >= %s ORDER BY name",
        (now - GONE_AFTER,),
    ).fetchall()
    return [name for (name,) in rows]
