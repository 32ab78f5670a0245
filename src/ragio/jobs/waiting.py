"""Waiting for a job to end, inside a request, without asking the database again and
again: the change that ends a job announces it (``store.FINISHED_CHANNEL``, PostgreSQL
``NOTIFY`` at its commit), whichever process ran it, and the waiter listens on a
connection of its own.
"""

from __future__ import annotations

import threading
import time

import psycopg
import trio

from ragcore.jobs import ENDED
from ragio.db.pool import CONNECT_TIMEOUT_SECONDS, Database
from ragio.jobs import store

#: how often the listening thread looks up from the socket to see whether its request
#: is still waiting (it reads nothing from the database for that)
WAKE_SECONDS = 1.0


async def wait_for_job(database: Database, job: store.Job, seconds: float) -> store.Job:
    """``job`` once it has ended (done, failed or cancelled), or as it stands after
    ``seconds``."""
    if job.status in ENDED:
        return job
    gone = threading.Event()  # the request went away: the thread stops at its next wake

    def listen() -> store.Job | None:
        deadline = time.monotonic() + seconds
        with psycopg.connect(
            database.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
        ) as conn:
            conn.execute(f"LISTEN {store.FINISHED_CHANNEL}")
            latest = store.get_job(conn, job.id)  # it may have ended before we listened
            while latest is not None and latest.status not in ENDED:
                left = deadline - time.monotonic()
                if left <= 0 or gone.is_set():
                    break
                heard = [
                    note.payload
                    for note in conn.notifies(timeout=min(WAKE_SECONDS, left), stop_after=1)
                ]
                if str(job.id) in heard:
                    latest = store.get_job(conn, job.id)
            return latest

    try:
        latest = await trio.to_thread.run_sync(listen, abandon_on_cancel=True)
    finally:
        gone.set()
    return latest or job
