"""Each platform delivery is answered once, across retries and restarts, and one whose
answer was cut off is answered when the service starts again.

The webhook acknowledges a delivery before answering it (platforms time out long
before a model answers), so the platform never delivers it again: the delivery is
stored with its message when claimed and marked answered when its reply has gone out.
A delivery records the process that took it. Every process looks, at start-up and every
``RESUME_SECONDS``, for deliveries claimed within ``RESUME_WINDOW``, never answered, whose
process is gone (``ragio.db.presence``): it takes them up (each once: ``resumed_at``) and
answers them; older ones are given up and logged. A delivery whose process is alive is
left to it, however long its answer takes, so any number of processes on one database
answer each delivery once, a crash of one of them included.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.channels.messages import InboundMessage
from ragio.db.presence import GONE_AFTER

RETENTION = timedelta(days=30)  # platforms give up redelivering within a day; keep a wide margin
#: how old a cut-off answer may be and still be given
RESUME_WINDOW = timedelta(hours=1)
RESUME_SECONDS = 30.0  # how often a process looks for the deliveries of gone processes


def claim_delivery(
    conn: psycopg.Connection, message: InboundMessage, now: datetime, process: str = ""
) -> bool:
    """True when this call recorded the delivery (answer it); False when it was already
    taken by an earlier delivery, another request at the same moment, or before a
    restart. Records older than RETENTION at ``now`` are dropped on the way."""
    with conn.transaction():
        row = conn.execute(
            """INSERT INTO channel_updates (channel, delivery_id, message, received_at,
                                           claimed_by)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (channel, delivery_id) DO NOTHING
               RETURNING delivery_id""",
            (
                message.channel,
                message.delivery_id,
                Jsonb(attrs.asdict(message)),
                now,
                process or None,
            ),
        ).fetchone()
        conn.execute("DELETE FROM channel_updates WHERE received_at < %s", (now - RETENTION,))
    return row is not None


def mark_answered(conn: psycopg.Connection, channel: str, delivery_id: str) -> None:
    conn.execute(
        """UPDATE channel_updates SET answered_at = now(), message = NULL
           WHERE channel = %s AND delivery_id = %s""",
        (channel, delivery_id),
    )


def take_unanswered(
    conn: psycopg.Connection, now: datetime, process: str = ""
) -> tuple[list[InboundMessage], int]:
    """The deliveries ``process`` answers at ``now``: claimed within ``RESUME_WINDOW``,
    never answered nor resumed, by a process that is gone (``GONE_AFTER``), oldest first,
    marked resumed by ``process``; and how many older ones were given up."""
    with conn.transaction():
        given_up = conn.execute(
            """UPDATE channel_updates SET message = NULL, resumed_at = %(now)s
               WHERE answered_at IS NULL AND message IS NOT NULL AND received_at < %(since)s""",
            {"now": now, "since": now - RESUME_WINDOW},
        ).rowcount
        rows = conn.execute(
            """UPDATE channel_updates SET resumed_at = %(now)s, claimed_by = %(process)s
               WHERE (channel, delivery_id) IN (
                   SELECT channel, delivery_id FROM channel_updates
                   WHERE answered_at IS NULL AND resumed_at IS NULL AND message IS NOT NULL
                     AND (claimed_by IS NULL OR claimed_by NOT IN (
                          SELECT name FROM service_processes WHERE seen_at >= %(alive)s))
                   FOR UPDATE SKIP LOCKED)
               RETURNING message, received_at""",
            {"now": now, "process": process or None, "alive": now - GONE_AFTER},
        ).fetchall()
    rows.sort(key=lambda row: row[1])
    return [_message(stored) for stored, _ in rows], given_up


def _message(stored: dict[str, Any]) -> InboundMessage:
    return InboundMessage(**stored)
