"""The voice channel's calls and their turns (tables ``voice_calls`` and ``voice_turns``),
for ``GET /voice/calls``.

A call is begun when its media stream starts, each question is recorded as a turn
when it is over (answered, interrupted, failed or hung up), and the call is ended when
its stream stops. The caller's number is kept only as a hash. Calls are kept for
``RETENTION``: older ones, with their turns, are deleted when a call begins.

Each function takes a psycopg connection first and the time (``now``) from its caller;
run them with ``await svc.database.run(fn, *args)``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ragcore.employees.learning import asker_hash
from ragcore.voice.call import TurnFinished

#: how long a call and its turns are kept
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
) -> None:
    """Record a call whose media stream has started. The same ``call_sid`` again (the
    stream reconnected during the call) keeps the row: its new ``stream_sid`` is stored
    and the call is open again. Calls older than ``RETENTION`` are deleted on the way."""
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


def record_turn(
    conn: psycopg.Connection, call_sid: str, record: TurnFinished, now: datetime
) -> None:
    """Record one turn of the call, or replace it when recorded before (its
    ``created_at`` is kept). The answer's citations, role, provider, model and language
    come from ``record.answer_detail`` (all empty when no answer came). A turn of a call
    never begun (or already deleted) is not recorded."""
    detail = record.answer_detail
    citations = (
        [
            {
                "number": c.number,
                "document_id": c.document_id,
                "document_name": c.document_name,
                "live_action_id": c.live_action_id,
            }
            for c in detail.citations
        ]
        if detail is not None
        else []
    )
    conn.execute(
        """INSERT INTO voice_turns (call_id, turn, question, answer, outcome, citations, role,
                                    provider, model, language, stages, created_at)
           SELECT id, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s
             FROM voice_calls WHERE call_sid = %s
           ON CONFLICT (call_id, turn) DO UPDATE
              SET question = EXCLUDED.question,
                  answer = EXCLUDED.answer,
                  outcome = EXCLUDED.outcome,
                  citations = EXCLUDED.citations,
                  role = EXCLUDED.role,
                  provider = EXCLUDED.provider,
                  model = EXCLUDED.model,
                  language = EXCLUDED.language,
                  stages = EXCLUDED.stages""",
        (
            record.turn,
            record.question,
            record.answer,
            record.outcome,
            Jsonb(citations),
            detail.role if detail is not None else None,
            detail.provider if detail is not None else None,
            detail.model if detail is not None else None,
            detail.language if detail is not None else None,
            Jsonb(record.stages),
            now,
            call_sid,
        ),
    )


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
_TURN_COLUMNS = (
    "turn",
    "question",
    "answer",
    "outcome",
    "citations",
    "role",
    "provider",
    "model",
    "language",
    "stages",
    "created_at",
)


def recent_calls(
    conn: psycopg.Connection, limit: int, before: int | None = None
) -> list[dict[str, Any]]:
    """At most ``limit`` calls, newest first, each with its ``turns`` in order; with
    ``before`` (a call's ``id``), the calls that began before that one."""
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
        by_id = {call["id"]: call for call in calls}
        turns = conn.execute(
            f"""SELECT call_id, {", ".join(_TURN_COLUMNS)} FROM voice_turns
                 WHERE call_id = ANY(%s) ORDER BY call_id, turn""",
            (list(by_id),),
        ).fetchall()
    for call_id, *turn in turns:
        by_id[call_id]["turns"].append(dict(zip(_TURN_COLUMNS, turn, strict=True)))
    return calls
