"""The voice channel's calls (table ``voice_calls``), and ``GET /voice/calls``: each
call with its turns.

A call is begun when its media stream starts and ended when its stream stops. Its turns
are the turns of its conversation (``ragio.chat.conversations``: channel ``voice``, found
by the call's place key, ``ragcore.chat.history.place_key("voice", call_sid)``), each
question kept once: recorded when answered, finished (how it ended, its stage timings)
when the call's turn is over. The caller's number is kept only as a hash. Calls are kept
for ``RETENTION``: older ones are deleted when a call begins (their conversations are kept
as long as conversations are, ``CONVERSATION_RETENTION_DAYS``).

Each function takes a psycopg connection first and the time (``now``) from its caller;
run them with ``await svc.database.run(fn, *args)``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from ragcore.chat.history import place_key
from ragcore.employees.learning import asker_hash
from ragio.chat.conversations import TURN_COLUMNS

#: how long a call is kept
RETENTION = timedelta(days=90)


def caller_hash(caller: str) -> str:
    """The caller's number as kept: the hash a channel's asker gets (``voice:<number>``)."""
    return asker_hash(f"voice:{caller}")


def begin_call(
    conn: psycopg.Connection,
    call_sid: str,
    stream_sid: str,
    caller: str,
    role: str | None,
    now: datetime,
) -> int:
    """Record a call whose media stream has started. The same ``call_sid`` again (the
    stream reconnected during the call) keeps the row: its new ``stream_sid`` is stored
    and the call is open again. Calls older than ``RETENTION`` are deleted on the way.
    The number of the call's latest turn so far (0: none; more after a reconnect): its
    next questions are numbered after it."""
    with conn.transaction():
        conn.execute(
            """INSERT INTO voice_calls (call_sid, stream_sid, caller_hash, role, started_at)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (call_sid) DO UPDATE
                  SET stream_sid = EXCLUDED.stream_sid,
                      role = COALESCE(EXCLUDED.role, voice_calls.role),
                      ended_at = NULL,
                      end_reason = NULL""",
            (call_sid, stream_sid, caller_hash(caller), role, now),
        )
        conn.execute("DELETE FROM voice_calls WHERE started_at < %s", (now - RETENTION,))
        row = conn.execute(
            """SELECT max(t.turn) FROM conversations c
                 JOIN conversation_turns t ON t.conversation_id = c.id
                WHERE c.channel = 'voice' AND c.continuation = %s""",
            (place_key("voice", call_sid),),
        ).fetchone()
    return int(row[0] or 0) if row is not None else 0


def end_call(conn: psycopg.Connection, call_sid: str, reason: str, now: datetime) -> None:
    """Record that the call ended, and why; the first end recorded stands (until the
    stream reconnects: ``begin_call``)."""
    conn.execute(
        """UPDATE voice_calls
              SET ended_at = COALESCE(ended_at, %s), end_reason = COALESCE(end_reason, %s)
            WHERE call_sid = %s""",
        (now, reason, call_sid),
    )


_CALL_COLUMNS = ("id", "call_sid", "caller_hash", "role", "started_at", "ended_at", "end_reason")
#: a turn as ``GET /voice/calls`` shows it, from the conversation's turn (a call's turns
#: are not rated)
_RATING = ("feedback", "feedback_at", "feedback_comment")
_TURN_COLUMNS = tuple(
    c
    for c in TURN_COLUMNS
    # who wrote is in the outcome: a caller's words for a person are ``to_person``
    if c not in ("search_question", *_RATING, "author", "person")
)
#: a citation's fields shown (the conversation keeps the whole citation)
_CITATION_FIELDS = ("number", "document_id", "document_name", "live_action_id")


def recent_calls(
    conn: psycopg.Connection, limit: int, before: int | None = None
) -> list[dict[str, Any]]:
    """At most ``limit`` calls, newest first, each with its ``turns`` in order (its
    conversation's); with ``before`` (a call's ``id``), the calls that began before that
    one. A turn's ``stages`` are its timings; an answered turn is ``answered`` however its
    answer went (the conversation tells ``not_found`` and ``limited`` apart)."""
    with conn.transaction():  # the calls and their turns as of one moment
        rows = conn.execute(
            f"""SELECT {", ".join(_CALL_COLUMNS)} FROM voice_calls
                 WHERE %(before)s::bigint IS NULL
                    OR (started_at, id) < (SELECT started_at, id FROM voice_calls
                                            WHERE id = %(before)s::bigint)
                 ORDER BY started_at DESC, id DESC
                 LIMIT %(limit)s""",
            {"before": before, "limit": limit},
        ).fetchall()
        calls = [{**dict(zip(_CALL_COLUMNS, row, strict=True)), "turns": []} for row in rows]
        by_key = {place_key("voice", call["call_sid"]): call for call in calls}
        turns = conn.execute(
            f"""SELECT c.continuation, {", ".join(f"t.{column}" for column in _TURN_COLUMNS)}
                  FROM conversations c JOIN conversation_turns t ON t.conversation_id = c.id
                 WHERE c.id IN (SELECT DISTINCT ON (continuation) id FROM conversations
                                 WHERE channel = 'voice' AND continuation = ANY(%s)
                                 ORDER BY continuation, updated_at DESC, id DESC)
                 ORDER BY c.continuation, t.turn""",
            (list(by_key),),
        ).fetchall()
    for key, *turn in turns:
        by_key[key]["turns"].append(_voice_turn(dict(zip(_TURN_COLUMNS, turn, strict=True))))
    return calls


def _voice_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """A conversation's turn as a call's (``ragcore.api.voice.VoiceTurn``)."""
    shown = {column: turn[column] for column in _TURN_COLUMNS if column != "timings"}
    shown["citations"] = [{f: c.get(f) for f in _CITATION_FIELDS} for c in turn["citations"]]
    if turn["outcome"] in ("not_found", "limited"):
        shown["outcome"] = "answered"
    shown["stages"] = turn["timings"]
    return shown
