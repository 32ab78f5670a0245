"""Conversations and their turns (tables ``conversations`` and ``conversation_turns``),
for follow-up questions and for ``GET /conversations``; the asker's rating of a turn
(``set_feedback``).

A turn is recorded once it is answered (or failed): a conversation is begun with its
first turn, so a request that never got that far leaves nothing. A call numbers its turns
itself (its questions): each is recorded once, by whichever comes first of its answer
(``record_turn``) and the call's end of the turn (``finish_turn``: how the turn ended and
its stage timings; a question never answered is recorded then), the other completing the
same row. Conversations are kept
``CONVERSATION_RETENTION_DAYS`` (0: until deleted); older ones, with their turns, are
deleted when one begins. Who asked is kept only as a hash.

Each function takes a psycopg connection first and the time (``now``) from its caller;
run them with ``await svc.database.run(fn, *args)``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.api.conversations import EXCERPT_CHARS
from ragcore.api.problems import ProblemError
from ragcore.chat.followup import Exchange
from ragcore.chat.history import RecordedTurn, TurnRecord
from ragcore.employees.learning import asker_hash
from ragcore.handoff.modes import HANDOFF_CHANNELS

#: the earlier exchanges a follow-up is read with (the rewrite sees the latest of them)
HISTORY_LOADED = 6


def unknown_conversation(conversation_id: int) -> ProblemError:
    return ProblemError(
        404,
        f"no conversation {conversation_id}: leave conversation_id out to begin one",
        field="conversation_id",
    )


def load_history(conn: psycopg.Connection, conversation_id: int) -> list[Exchange]:
    """The conversation's latest exchanges, oldest first; a 404 problem when there is no
    such conversation (never begun, or deleted)."""
    with conn.transaction():
        found = conn.execute(
            "SELECT 1 FROM conversations WHERE id = %s", (conversation_id,)
        ).fetchone()
        if found is None:
            raise unknown_conversation(conversation_id)
        rows = conn.execute(
            """SELECT question, answer, search_question FROM conversation_turns
                WHERE conversation_id = %s AND outcome <> 'failed' AND answer <> ''
                  AND author = 'ai'
                ORDER BY turn DESC LIMIT %s""",
            (conversation_id, HISTORY_LOADED),
        ).fetchall()
    return [Exchange(q, a, s) for q, a, s in reversed(rows)]


def find_continued(
    conn: psycopg.Connection,
    channel: str,
    key: str | None,
    active_since: datetime | None = None,
    api_key_id: int | None = None,
) -> int | None:
    """The latest conversation on ``channel`` whose continuation key is ``key``, if any
    (with ``active_since``, only one active since then, or one a person answers however
    long ago; with ``api_key_id``, only one asked with that API key). A closed one is never
    continued: the next message begins a new one."""
    if key is None:
        return None
    row = conn.execute(
        """SELECT id, mode FROM conversations
            WHERE channel = %s AND continuation = %s
              AND (%s::timestamptz IS NULL OR updated_at >= %s::timestamptz OR mode = 'human')
              AND (%s::bigint IS NULL OR api_key_id = %s::bigint)
            ORDER BY updated_at DESC, id DESC LIMIT 1""",
        (channel, key, active_since, active_since, api_key_id, api_key_id),
    ).fetchone()
    if row is None or row[1] == "closed":
        return None
    return int(row[0])


@attrs.frozen
class Found:
    """The conversation a turn belongs to, as ``ongoing`` finds it."""

    conversation_id: int | None = None
    history: tuple[Exchange, ...] = ()
    mode: str = "ai"
    refusals: int = 0
    last_message_at: datetime | None = None


def ongoing(
    conn: psycopg.Connection,
    channel: str,
    key: str | None,
    idle_minutes: int,
    now: datetime,
    conversation_id: int | None = None,
    api_key_id: int | None = None,
) -> Found:
    """The conversation a new turn on ``channel`` at the place ``key`` belongs to (one
    active in the last ``idle_minutes``; 0: however long ago; or one a person answers),
    or the one named ``conversation_id`` (a 404 problem when there is none), with its
    latest exchanges and its mode; empty when the turn begins a conversation."""
    if conversation_id is None:
        since = now - timedelta(minutes=idle_minutes) if idle_minutes > 0 else None
        conversation_id = find_continued(conn, channel, key, since, api_key_id)
        if conversation_id is None:
            return Found()
    elif api_key_id is not None and not has_conversation(conn, conversation_id, api_key_id):
        raise unknown_conversation(conversation_id)  # another key's: as if never begun
    history = load_history(conn, conversation_id)
    row = conn.execute(
        "SELECT mode, refusals, last_message_at FROM conversations WHERE id = %s",
        (conversation_id,),
    ).fetchone()
    if row is None:  # deleted meanwhile: the turn begins one
        return Found()
    return Found(conversation_id, tuple(history), str(row[0]), int(row[1]), row[2])


def record_turn(
    conn: psycopg.Connection,
    record: TurnRecord,
    now: datetime,
    retention_days: int,
    stages: dict[str, int] | None = None,
) -> RecordedTurn:
    """Record the turn, beginning its conversation when it has none (and deleting those
    older than ``retention_days`` on the way); its conversation's id and its number. A conversation
    deleted meanwhile is begun again. A numbered turn (``record.turn``) is recorded at its
    number; when the call's end of it came first, how it ended stands (an interrupted,
    hung up or failed turn stays so, with the call's timings) and the answer fills in.
    Its timings are ``answer_ms`` and its ``stages`` (``ragcore.chat.timings``)."""
    timings = dict(stages or {})
    if record.started is not None:
        timings["answer_ms"] = max(0, round((now - record.started).total_seconds() * 1000))
    if record.turn is not None:
        numbered = _numbered(conn, record, timings, now, retention_days, final=False)
        return RecordedTurn(numbered, record.turn)
    with conn.transaction():
        row: tuple[int, int] | None = None
        if record.conversation_id is not None:
            row = conn.execute(
                """UPDATE conversations
                      SET turn_count = turn_count + 1, updated_at = %s,
                          role = COALESCE(%s, role),
                          continuation = CASE WHEN %s = 'person' THEN continuation ELSE %s END
                    WHERE id = %s
                RETURNING id, turn_count""",
                (now, record.role, record.author, record.continuation, record.conversation_id),
            ).fetchone()
        if row is None:
            row = (_begin(conn, record, now, retention_days, turn_count=1), 1)
        conversation_id, turn = int(row[0]), int(row[1])
        _insert_turn(conn, conversation_id, turn, record, timings, now)
        _written(conn, conversation_id, turn, record, now)
    return RecordedTurn(conversation_id, turn)


def _written(
    conn: psycopg.Connection, conversation_id: int, turn: int, record: TurnRecord, now: datetime
) -> None:
    """After a turn of a customer's conversation: where a person's message reaches the
    customer, the AI's grounded refusals in a row, when it was last written in and since
    when a customer waits for a person; and the event the live views read."""
    if record.channel not in HANDOFF_CHANNELS:
        return
    conn.execute(
        """UPDATE conversations
              SET reply_to = COALESCE(%(reply_to)s, reply_to),
                  refusals = CASE WHEN %(author)s <> 'ai' THEN refusals
                                  WHEN %(outcome)s = 'not_found' THEN refusals + 1 ELSE 0 END,
                  last_message_at = %(now)s,
                  waiting_since = CASE WHEN %(author)s = 'customer'
                                       THEN COALESCE(waiting_since, %(now)s)
                                       WHEN %(author)s = 'person' THEN NULL
                                       ELSE waiting_since END
            WHERE id = %(id)s""",
        {
            "reply_to": Jsonb(record.reply_to) if record.reply_to is not None else None,
            "author": record.author,
            "outcome": record.outcome,
            "now": now,
            "id": conversation_id,
        },
    )
    conn.execute(  # with the conversation's mode as the turn leaves it
        """INSERT INTO conversation_events (conversation_id, at, kind, turn, mode)
           SELECT id, %s, 'turn', %s, mode FROM conversations WHERE id = %s""",
        (now, turn, conversation_id),
    )


def finish_turn(
    conn: psycopg.Connection,
    record: TurnRecord,
    timings: dict[str, int],
    now: datetime,
    retention_days: int,
) -> int:
    """The channel's end of the numbered turn ``record.turn`` (a call's question): how it
    ended (``record.outcome``; ``answered`` keeps the answer's own ``not_found`` or
    ``limited``) and ``timings``, the call's stage timings, which stand beside the
    answer's stages (``ragcore.chat.timings``) and replace its ``answer_ms`` and
    ``first_token_ms``. The turn is recorded when its answer was not (never answered, or
    not yet: the answer then fills it in); otherwise what the answer recorded stands, and
    an answer the row lacks is filled in. The conversation's id."""
    return _numbered(conn, record, timings, now, retention_days, final=True)


#: advisory lock class for a keyed conversation's beginning (with ``hashtext`` of its key)
BEGIN_LOCK_CLASS = 0x636F6E76  # "conv"
_COLUMNS = (
    "author",
    "question",
    "search_question",
    "answer",
    "citations",
    "role",
    "provider",
    "model",
    "language",
)
#: on a numbered turn recorded again: the answer's record fills in the call's end of the
#: turn (whose outcome, when not answered, and timings stand, the answer's stages added);
#: the call's end keeps the answer's record (filled in where it has no answer), with its
#: outcome and timings, the answer's stages kept beside them. A call's turn's
#: ``answer_ms`` and ``first_token_ms`` are the call's (from the transcript), never those
#: of the answer's record.
_CALLS_OWN = "'{answer_ms,first_token_ms}'::text[]"
_ANSWER_MERGE = (
    ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS)
    + f""",
    outcome = CASE WHEN conversation_turns.outcome IN ('interrupted', 'hung up', 'failed')
                   THEN conversation_turns.outcome ELSE EXCLUDED.outcome END,
    timings = (EXCLUDED.timings - {_CALLS_OWN}) || conversation_turns.timings"""
)
_FINISH_MERGE = (
    ", ".join(
        f"{c} = CASE WHEN conversation_turns.answer = '' THEN EXCLUDED.{c} "
        f"ELSE conversation_turns.{c} END"
        for c in _COLUMNS
    )
    + f""",
    outcome = CASE WHEN EXCLUDED.outcome = 'answered'
                        AND conversation_turns.outcome IN ('not_found', 'limited')
                   THEN conversation_turns.outcome ELSE EXCLUDED.outcome END,
    timings = (conversation_turns.timings - {_CALLS_OWN}) || EXCLUDED.timings"""
)


def _participant(record: TurnRecord) -> str | None:
    who = record.participant
    return asker_hash(f"{record.channel}:{who}") if who else None


def _begin(
    conn: psycopg.Connection,
    record: TurnRecord,
    now: datetime,
    retention_days: int,
    turn_count: int,
) -> int:
    """Begin the turn's conversation (deleting those older than ``retention_days`` on the
    way); its id."""
    if retention_days > 0:
        conn.execute(
            "DELETE FROM conversations WHERE updated_at < %s",
            (now - timedelta(days=retention_days),),
        )
    row = conn.execute(
        """INSERT INTO conversations (channel, role, participant_hash, continuation,
                                      started_at, updated_at, turn_count, api_key_id)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        RETURNING id""",
        (
            record.channel,
            record.role,
            _participant(record),
            record.continuation,
            now,
            now,
            turn_count,
            record.api_key_id,
        ),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _insert_turn(
    conn: psycopg.Connection,
    conversation_id: int,
    turn: int,
    record: TurnRecord,
    timings: dict[str, int],
    now: datetime,
    merge: str | None = None,
) -> None:
    """Insert turn ``turn`` of the conversation; with ``merge``, a row already there is
    updated by it (the ``SET`` list of a numbered turn's second writer)."""
    conflict = f"ON CONFLICT (conversation_id, turn) DO UPDATE SET {merge}" if merge else ""
    conn.execute(
        f"""INSERT INTO conversation_turns
                (conversation_id, turn, question, search_question, answer, outcome,
                 citations, role, provider, model, language, timings, created_at,
                 author, person)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
            {conflict}""",
        (
            conversation_id,
            turn,
            record.question,
            record.search_question,
            record.answer,
            record.outcome,
            Jsonb(record.citations),
            record.role,
            record.provider,
            record.model,
            record.language,
            Jsonb(timings),
            now,
            record.author,
            record.person,
        ),
    )


def _numbered(
    conn: psycopg.Connection,
    record: TurnRecord,
    timings: dict[str, int],
    now: datetime,
    retention_days: int,
    *,
    final: bool,
) -> int:
    """Record the numbered turn in the conversation keyed ``record.continuation`` on its
    channel (however old: a call's), begun when there is none; the two writers of one
    turn (its answer, the call's end of it: ``final``) take turns beginning it, so a call
    has one conversation."""
    assert record.turn is not None and record.continuation is not None
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
            (BEGIN_LOCK_CLASS, f"{record.channel}:{record.continuation}"),
        )
        conversation_id = find_continued(conn, record.channel, record.continuation)
        if conversation_id is None:
            conversation_id = _begin(conn, record, now, retention_days, turn_count=0)
        conn.execute(
            """UPDATE conversations
                  SET turn_count = GREATEST(turn_count, %s), updated_at = %s,
                      role = COALESCE(%s, role)
                WHERE id = %s""",
            (record.turn, now, record.role, conversation_id),
        )
        merge = _FINISH_MERGE if final else _ANSWER_MERGE
        _insert_turn(conn, conversation_id, record.turn, record, timings, now, merge)
        if not final:
            _written(conn, conversation_id, record.turn, record, now)
    return conversation_id


_CONVERSATION_COLUMNS = (
    "id",
    "channel",
    "role",
    "participant_hash",
    "started_at",
    "updated_at",
    "turn_count",
    "mode",
    "waiting_since",
)
#: a turn as GET /conversations/{id} shows it (GET /voice/calls shows fewer)
TURN_COLUMNS = (
    "turn",
    "question",
    "search_question",
    "answer",
    "outcome",
    "citations",
    "role",
    "provider",
    "model",
    "language",
    "timings",
    "created_at",
    "feedback",
    "feedback_at",
    "feedback_comment",
    "author",
    "person",
)


def list_conversations(
    conn: psycopg.Connection,
    limit: int,
    before: int | None = None,
    channel: str | None = None,
    role: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    mode: str | None = None,
    text: str | None = None,
    api_key_id: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """At most ``limit`` conversations, the latest begun first (by id: a stable order,
    which a new turn does not change, so a conversation continued while the owner pages
    is neither listed twice nor skipped), without their turns, and how many match on all
    pages (``before`` aside); with ``before`` (a conversation's id, deleted or not), those
    begun before it. ``channel``, ``role``, ``mode``: only those; ``since``, ``until``:
    active (updated) in that span; ``text``: an ILIKE pattern (backslash escapes) that a
    turn's question or answer matches; ``api_key_id``: only those asked with that API key.
    Each has its first question and last message."""
    params = {
        "mode": mode,
        "channel": channel,
        "role": role,
        "since": since,
        "until": until,
        "text": text,
        "key": api_key_id,
        "before": before,
        "limit": limit,
        "excerpt": EXCERPT_CHARS,
    }
    with conn.transaction():
        rows = conn.execute(
            f"""SELECT {", ".join(_CONVERSATION_COLUMNS)}, ({_FIRST_QUESTION}), ({_LAST_MESSAGE})
                  FROM conversations c
                 WHERE {_MATCHING}
                   AND (%(before)s::bigint IS NULL OR id < %(before)s::bigint)
                 ORDER BY id DESC
                 LIMIT %(limit)s""",
            params,
        ).fetchall()
        counted = conn.execute(
            f"SELECT count(*) FROM conversations c WHERE {_MATCHING}", params
        ).fetchone()
    listed = [
        {
            **dict(zip(_CONVERSATION_COLUMNS, row[:-2], strict=True)),
            "first_question": row[-2],
            "last_message": row[-1],
        }
        for row in rows
    ]
    return listed, int(counted[0]) if counted else 0


#: the conversations GET /conversations lists: its filters (the page's ``before`` aside)
_MATCHING = """
        (%(channel)s::text IS NULL OR channel = %(channel)s)
    AND (%(role)s::text IS NULL OR role = %(role)s)
    AND (%(since)s::timestamptz IS NULL OR updated_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR updated_at < %(until)s)
    AND (%(mode)s::text IS NULL OR mode = %(mode)s)
    AND (%(key)s::bigint IS NULL OR api_key_id = %(key)s::bigint)
    AND (%(text)s::text IS NULL OR EXISTS (
            SELECT 1 FROM conversation_turns t
             WHERE t.conversation_id = c.id
               AND (t.question ILIKE %(text)s OR t.answer ILIKE %(text)s)))"""
#: a listed conversation's first question asked (a person's message has none)
_FIRST_QUESTION = """
    SELECT left(t.question, %(excerpt)s) FROM conversation_turns t
     WHERE t.conversation_id = c.id AND t.question <> ''
     ORDER BY t.turn LIMIT 1"""
#: a listed conversation's last message: who wrote it and its first characters (a turn of
#: the AI ends with its answer; a customer's message for a person has only its question)
_LAST_MESSAGE = """
    SELECT jsonb_build_object(
               'author', CASE WHEN t.answer = '' THEN 'customer' ELSE t.author END,
               'text', left(CASE WHEN t.answer = '' THEN t.question ELSE t.answer END,
                            %(excerpt)s))
      FROM conversation_turns t WHERE t.conversation_id = c.id
     ORDER BY t.turn DESC LIMIT 1"""


def has_conversation(
    conn: psycopg.Connection, conversation_id: int, api_key_id: int | None = None
) -> bool:
    """Whether the conversation exists (with ``api_key_id``: and was asked with that key)."""
    return (
        conn.execute(
            """SELECT 1 FROM conversations
                WHERE id = %s AND (%s::bigint IS NULL OR api_key_id = %s::bigint)""",
            (conversation_id, api_key_id, api_key_id),
        ).fetchone()
        is not None
    )


def set_feedback(
    conn: psycopg.Connection,
    conversation_id: int,
    turn: int,
    rating: str | None,
    now: datetime,
    comment: str | None = None,
    place: tuple[str, str] | None = None,
) -> str | None:
    """Rate turn ``turn`` of the conversation ``rating`` (``up`` or ``down``, checked by
    ``ragcore.api.conversations.TurnFeedback``) with ``comment`` (None: none) at ``now``;
    None takes a rating back, its comment with it. Rating the same again keeps when it was
    first given; its comment is the one given last. ``place``: rated from a chat
    (``(channel, continuation key)``): only an AI answer of a conversation on that channel
    at that place is rated. The conversation's channel; None when it has no such turn
    (or, with ``place``, not there)."""
    row = conn.execute(
        """UPDATE conversation_turns t
              SET feedback_at = CASE WHEN %(rating)s::text IS NULL THEN NULL
                                     WHEN t.feedback IS NOT DISTINCT FROM %(rating)s::text
                                     THEN t.feedback_at ELSE %(now)s END,
                  feedback = %(rating)s::text,
                  feedback_comment = CASE WHEN %(rating)s::text IS NULL THEN NULL
                                          ELSE %(comment)s::text END
             FROM conversations c
            WHERE c.id = t.conversation_id
              AND t.conversation_id = %(conversation)s AND t.turn = %(turn)s
              AND (%(channel)s::text IS NULL
                   OR (c.channel = %(channel)s AND c.continuation = %(key)s
                       AND t.author = 'ai'))
        RETURNING c.channel""",
        {
            "rating": rating,
            "comment": comment,
            "now": now,
            "conversation": conversation_id,
            "turn": turn,
            "channel": place[0] if place is not None else None,
            "key": place[1] if place is not None else None,
        },
    ).fetchone()
    return None if row is None else str(row[0])


def get_conversation(conn: psycopg.Connection, conversation_id: int) -> dict[str, Any] | None:
    """The conversation with all its turns in order; None when there is none."""
    with conn.transaction():
        row = conn.execute(
            f"SELECT {', '.join(_CONVERSATION_COLUMNS)} FROM conversations WHERE id = %s",
            (conversation_id,),
        ).fetchone()
        if row is None:
            return None
        turns = conn.execute(
            f"""SELECT {", ".join(TURN_COLUMNS)} FROM conversation_turns
                 WHERE conversation_id = %s ORDER BY turn""",
            (conversation_id,),
        ).fetchall()
        log = conn.execute(
            f"""SELECT {", ".join(LOG_COLUMNS)} FROM handoff_log
                 WHERE conversation_id = %s ORDER BY id""",
            (conversation_id,),
        ).fetchall()
    conversation = dict(zip(_CONVERSATION_COLUMNS, row, strict=True))
    conversation["turns"] = [dict(zip(TURN_COLUMNS, t, strict=True)) for t in turns]
    conversation["handoff_log"] = [dict(zip(LOG_COLUMNS, entry, strict=True)) for entry in log]
    return conversation


#: an entry of a conversation's handoff log as GET /conversations/{id} shows it
LOG_COLUMNS = ("at", "event", "from_mode", "to_mode", "by", "detail")
