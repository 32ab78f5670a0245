"""Each platform delivery is answered once, across retries and restarts, and one whose
answer was cut off is answered when the service starts again.

The webhook acknowledges a delivery before answering it (platforms time out long
before a model answers), so the platform never delivers it again: the delivery is
stored with its message when claimed and marked answered when its reply has gone out.
At start-up, deliveries claimed within ``RESUME_WINDOW`` and never answered are taken
up again (each once: ``resumed_at``); older ones are given up and logged. Two service
processes on one database resume each delivery once between them, but a process that
starts while another is still answering may answer that delivery a second time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.channels.messages import InboundMessage

RETENTION = timedelta(days=30)  # platforms give up redelivering within a day; keep a wide margin
#: how old a cut-off answer may be and still be given at start-up
RESUME_WINDOW = timedelta(hours=1)


def claim_delivery(conn: psycopg.Connection, message: InboundMessage, now: datetime) -> bool:
    """True when this call recorded the delivery (answer it); False when it was already
    taken by an earlier delivery, another request at the same moment, or before a
    restart. Records older than RETENTION at ``now`` are dropped on the way."""
    with conn.transaction():
        row = conn.execute(
            """INSERT INTO channel_updates (channel, delivery_id, message, received_at)
               VALUES (%s, %s, %s, %s)
               ON CONFLICT (channel, delivery_id) DO NOTHING
               RETURNING delivery_id""",
            (message.channel, message.delivery_id, Jsonb(attrs.asdict(message)), now),
        ).fetchone()
        conn.execute("DELETE FROM channel_updates WHERE received_at < %s", (now - RETENTION,))
    return row is not None


def mark_answered(conn: psycopg.Connection, channel: str, delivery_id: str) -> None:
    conn.execute(
        """UPDATE channel_updates SET answered_at = now(), message = NULL
           WHERE channel = %s AND delivery_id = %s""",
        (channel, delivery_id),
    )


def take_unanswered(conn: psycopg.Connection, now: datetime) -> tuple[list[InboundMessage], int]:
    """The deliveries to answer at ``now``, as the service starts (claimed within
    ``RESUME_WINDOW``, never answered nor resumed), oldest first, marked resumed; and how
    many older ones were given up."""
    with conn.transaction():
        given_up = conn.execute(
            """UPDATE channel_updates SET message = NULL, resumed_at = %(now)s
               WHERE answered_at IS NULL AND message IS NOT NULL AND received_at < %(since)s""",
            {"now": now, "since": now - RESUME_WINDOW},
        ).rowcount
        rows = conn.execute(
            """UPDATE channel_updates SET resumed_at = %s
               WHERE answered_at IS NULL AND resumed_at IS NULL AND message IS NOT NULL
               RETURNING message, received_at""",
            (now,),
        ).fetchall()
    rows.sort(key=lambda row: row[1])
    return [_message(stored) for stored, _ in rows], given_up


def _message(stored: dict[str, Any]) -> InboundMessage:
    return InboundMessage(**stored)
