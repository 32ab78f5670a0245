"""SQL for the handoff (migration 029): a conversation's mode and its log, the owner's
notifications that can be replied to, and the business's name and hours. Every value is
bound as a parameter, never formatted.

Each function takes a psycopg connection first; run them with
``await svc.database.run(fn, *args)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg

from ragcore.handoff.effects import HandoffConversation
from ragcore.handoff.modes import TIMEOUT
from ragcore.handoff.notices import Exchange

#: how many of a conversation's last messages the owner's notification shows
NOTIFIED_TURNS = 4


def move_mode(
    conn: psycopg.Connection,
    conversation_id: int,
    to: str,
    by: str,
    detail: str,
    now: datetime,
    from_modes: Sequence[str] = ("ai", "human"),
) -> bool:
    """Move the conversation to ``to`` from one of ``from_modes``, logged with who and
    why, and the event the live views read; False when it was not in one of them (or is
    in ``to`` already, or gone)."""
    with conn.transaction():
        row = conn.execute(
            """UPDATE conversations c SET mode = %(to)s, mode_changed_at = %(now)s,
                      refusals = 0,
                      last_message_at = CASE WHEN %(to)s = 'human' THEN %(now)s
                                             ELSE c.last_message_at END,
                      waiting_since = CASE WHEN %(to)s = 'human'
                                           THEN COALESCE(c.waiting_since, %(now)s) ELSE NULL END
                 FROM (SELECT id, mode FROM conversations WHERE id = %(id)s FOR UPDATE) old
                WHERE c.id = old.id AND old.mode = ANY(%(from)s) AND old.mode <> %(to)s
            RETURNING old.mode""",
            {"to": to, "now": now, "id": conversation_id, "from": list(from_modes)},
        ).fetchone()
        if row is None:
            return False
        _log(conn, conversation_id, now, "moved", str(row[0]), to, by, detail)
        conn.execute(
            """INSERT INTO conversation_events (conversation_id, at, kind, mode)
               VALUES (%s, %s, 'mode', %s)""",
            (conversation_id, now, to),
        )
    return True


def log_refused(
    conn: psycopg.Connection, conversation_id: int, by: str, detail: str, now: datetime
) -> None:
    """Write a refused attempt to write into the conversation to its log."""
    row = conn.execute(
        "SELECT mode FROM conversations WHERE id = %s", (conversation_id,)
    ).fetchone()
    if row is not None:
        _log(conn, conversation_id, now, "refused", str(row[0]), str(row[0]), by, detail)


def _log(
    conn: psycopg.Connection,
    conversation_id: int,
    at: datetime,
    event: str,
    from_mode: str,
    to_mode: str,
    by: str,
    detail: str,
) -> None:
    conn.execute(
        """INSERT INTO handoff_log (conversation_id, at, event, from_mode, to_mode, by, detail)
           VALUES (%s, %s, %s, %s, %s, %s, %s)""",
        (conversation_id, at, event, from_mode, to_mode, by, detail[:500]),
    )


def end_idle(conn: psycopg.Connection, now: datetime, idle_minutes: int) -> list[int]:
    """Hand back to the AI the conversations with a person nobody wrote in for
    ``idle_minutes`` (what a customer's next message would do anyway), so the inbox does
    not show them; their ids."""
    rows = conn.execute(
        """SELECT id FROM conversations
            WHERE mode = 'human' AND last_message_at <= %s""",
        (now - timedelta(minutes=idle_minutes),),
    ).fetchall()
    detail = f"nobody wrote for {idle_minutes} minutes"
    return [
        int(cid)
        for (cid,) in rows
        if move_mode(conn, int(cid), "ai", TIMEOUT, detail, now, ("human",))
    ]


def load_handoff(conn: psycopg.Connection, conversation_id: int) -> HandoffConversation | None:
    row = conn.execute(
        """SELECT c.channel, c.mode, c.reply_to, c.mode_changed_at,
                  EXISTS (SELECT 1 FROM conversation_turns t
                           WHERE t.conversation_id = c.id AND t.author = 'person'
                             AND t.created_at >= c.mode_changed_at)
             FROM conversations c WHERE c.id = %s""",
        (conversation_id,),
    ).fetchone()
    if row is None:
        return None
    channel, mode, reply_to, changed_at, person_wrote = row
    handed_at = changed_at if mode == "human" else None
    return HandoffConversation(
        conversation_id, channel, mode, reply_to, handed_at, bool(person_wrote)
    )


def last_messages(conn: psycopg.Connection, conversation_id: int) -> list[Exchange]:
    """The conversation's last messages, oldest first, as the owner's notification shows
    them (a turn of the AI is the customer's question and its answer)."""
    rows = conn.execute(
        """SELECT author, question, answer FROM conversation_turns
            WHERE conversation_id = %s ORDER BY turn DESC LIMIT %s""",
        (conversation_id, NOTIFIED_TURNS),
    ).fetchall()
    said: list[Exchange] = []
    for author, question, answer in reversed(rows):
        if question:
            said.append(Exchange("customer", question))
        if answer:
            said.append(Exchange("person" if author == "person" else "ai", answer))
    return said[-NOTIFIED_TURNS:]


def save_notification(
    conn: psycopg.Connection,
    channel: str,
    chat: str,
    message_ids: Sequence[str],
    conversation_id: int,
    now: datetime,
) -> None:
    """The owner's notification ``message_ids`` in ``chat``: a reply to one of them is a
    message in ``conversation_id``."""
    for message_id in message_ids:
        conn.execute(
            """INSERT INTO handoff_notifications (channel, chat, message_id, conversation_id,
                                                  sent_at)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (channel, chat, message_id)
               DO UPDATE SET conversation_id = EXCLUDED.conversation_id""",
            (channel, chat, message_id, conversation_id, now),
        )


def find_notified(conn: psycopg.Connection, channel: str, chat: str, message_id: str) -> int | None:
    row = conn.execute(
        """SELECT conversation_id FROM handoff_notifications
            WHERE channel = %s AND chat = %s AND message_id = %s""",
        (channel, chat, message_id),
    ).fetchone()
    return None if row is None else int(row[0])


def business(conn: psycopg.Connection) -> dict[str, Any]:
    """The profile's name, opening hours and time zone ('' when unset)."""
    row = conn.execute("SELECT name, opening_hours, timezone FROM business_profile").fetchone()
    name, hours, zone = row if row is not None else ("", "", "")
    return {"name": name, "opening_hours": hours, "timezone": zone}


def channel_of(conn: psycopg.Connection, conversation_id: int) -> str | None:
    row = conn.execute(
        "SELECT channel FROM conversations WHERE id = %s", (conversation_id,)
    ).fetchone()
    return None if row is None else str(row[0])
