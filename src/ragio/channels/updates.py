"""Each platform delivery is answered once, across retries and restarts."""

from __future__ import annotations

import psycopg

RETENTION = "30 days"  # platforms give up redelivering within a day; keep a wide margin


def claim_delivery(conn: psycopg.Connection, channel: str, delivery_id: str) -> bool:
    """True when this call recorded the delivery (answer it); False when it was already
    taken by an earlier delivery, another request at the same moment, or before a
    restart. Old records are dropped on the way."""
    with conn.transaction():
        row = conn.execute(
            """INSERT INTO channel_updates (channel, delivery_id) VALUES (%s, %s)
               ON CONFLICT (channel, delivery_id) DO NOTHING
               RETURNING delivery_id""",
            (channel, delivery_id),
        ).fetchone()
        conn.execute(
            f"DELETE FROM channel_updates WHERE received_at < now() - interval '{RETENTION}'"
        )
    return row is not None
