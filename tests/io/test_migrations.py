"""Migrations under the advisory lock: processes starting together take turns."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from ragcore.api.conversations import Conversation
from ragcore.chat.history import place_key
from ragcore.converter import converter
from ragio.chat.conversations import get_conversation, set_feedback
from ragio.db.migrations import apply_migrations, migration_files
from ragio.voice.calls import caller_hash, recent_calls
from tests.io.processes import RAGCHAT, clean_environ


def test_two_processes_migrating_at_once_do_not_collide(tmp_path, empty_database_url):
    database_url = empty_database_url
    env = clean_environ(database_url=database_url)
    processes = [
        subprocess.Popen(
            [*RAGCHAT, "migrate"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    with psycopg.connect(database_url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(versions) == [version for version, _, _ in migration_files()]
    applied, waited = sorted(out.strip() for out, _ in outputs)
    assert applied == "applied: " + ", ".join(f"{v:03d}_{n}" for v, n, _ in migration_files())
    assert waited == "the database is up to date"


def migrated_to(conn: psycopg.Connection, last: int) -> None:
    """Apply the migrations up to ``last`` as a service of that version did."""
    conn.execute(
        """CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
                                           applied_at timestamptz NOT NULL DEFAULT now())"""
    )
    for version, name, sql in migration_files():
        if version <= last:
            with conn.transaction():
                conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (version, name))


def test_voice_turns_survive_as_their_calls_conversations_turns(empty_database_url):
    """Migration 024: every voice_turns row is a turn of its call's conversation, once (a
    turn the conversation already had is finished with the call's outcome and stages, not
    copied); a call from before calls were conversations gets one; GET /voice/calls reads
    the calls as before, and the turns read as conversation turns."""
    start = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)

    def at(seconds: int) -> datetime:
        return start + timedelta(seconds=seconds)

    cited = [{"number": 1, "document_id": 7, "document_name": "refunds.md", "live_action_id": None}]
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrated_to(conn, 23)
        calls = conn.execute(
            """INSERT INTO voice_calls (call_sid, stream_sid, caller_hash, role, started_at,
                                        ended_at, end_reason)
               VALUES ('CA-a', 'MZ-a', %s, 'support', %s, %s, 'the caller hung up'),
                      ('CA-b', 'MZ-b', %s, NULL, %s, NULL, NULL)
            RETURNING id""",
            (caller_hash("+15550001"), at(0), at(60), caller_hash("+15550002"), at(100)),
        ).fetchall()
        (a,), (b,) = calls
        voice_turns = [
            (a, 1, "Q1", "A1 [1].", "answered", cited, {"transcript_ms": 250}, at(15)),
            (a, 2, "Q2", "", "interrupted", [], {"transcript_ms": 300}, at(25)),
            (a, 3, "Q3", "", "failed", [], {}, at(41)),
            (a, 4, "Q4", "", "hung up", [], {"transcript_ms": 100}, at(50)),
            (b, 1, "Hours?", "9 to 5 [1].", "answered", cited, {"answer_ms": 900}, at(110)),
        ]
        for call, turn, question, answer, outcome, citations, stages, created in voice_turns:
            conn.execute(
                """INSERT INTO voice_turns (call_id, turn, question, answer, outcome,
                                            citations, role, stages, created_at)
                   VALUES (%s, %s, %s, %s, %s, %s, 'support', %s, %s)""",
                (call, turn, question, answer, outcome, Jsonb(citations), Jsonb(stages), created),
            )
        # the call's conversation, as the service recorded it beside voice_turns: its
        # answered and failed questions (Q1 as not_found), numbered by answer
        key = place_key("voice", "CA-a")
        [(conversation,)] = conn.execute(
            """INSERT INTO conversations (channel, role, participant_hash, continuation,
                                          started_at, updated_at, turn_count)
               VALUES ('voice', 'support', %s, %s, %s, %s, 2) RETURNING id""",
            (caller_hash("+15550001"), key, at(10), at(40)),
        ).fetchall()
        full = [{**cited[0], "chunk_id": 11, "snippet": "Within 30 days", "score": 0.5}]
        for turn, question, answer, outcome, citations, created in [
            (1, "Q1", "A1 [1].", "not_found", full, at(10)),
            (2, "Q3", "", "failed", [], at(40)),
        ]:
            conn.execute(
                """INSERT INTO conversation_turns (conversation_id, turn, question, answer,
                                                   outcome, citations, timings, created_at)
                   VALUES (%s, %s, %s, %s, %s, %s, '{"answer_ms": 700}', %s)""",
                (conversation, turn, question, answer, outcome, Jsonb(citations), created),
            )
        chat = conn.execute(
            """INSERT INTO conversations (channel, continuation, started_at, updated_at)
               VALUES ('chat', %s, %s, %s) RETURNING id""",
            (key, at(0), at(0)),
        ).fetchone()[0]

        assert apply_migrations(conn)[0] == "024_voice_turns_in_conversations"

        assert conn.execute("SELECT to_regclass('voice_turns')").fetchone()[0] is None
        listed = recent_calls(conn, 10)
        assert [c["call_sid"] for c in listed] == ["CA-b", "CA-a"]
        new, old = listed
        assert [
            (t["turn"], t["question"], t["answer"], t["outcome"], t["stages"], t["created_at"])
            for t in old["turns"]
        ] == [
            (1, "Q1", "A1 [1].", "answered", {"transcript_ms": 250}, at(10)),
            (2, "Q2", "", "interrupted", {"transcript_ms": 300}, at(25)),
            (3, "Q3", "", "failed", {}, at(40)),
            (4, "Q4", "", "hung up", {"transcript_ms": 100}, at(50)),
        ]
        assert old["turns"][0]["citations"] == cited
        [turn] = new["turns"]
        assert (turn["turn"], turn["question"], turn["outcome"]) == (1, "Hours?", "answered")
        assert (turn["citations"], turn["stages"]) == (cited, {"answer_ms": 900})

        kept = get_conversation(conn, conversation)
        assert kept is not None and kept["turn_count"] == 4
        assert [(t["turn"], t["outcome"]) for t in kept["turns"]] == [
            (1, "not_found"),
            (2, "interrupted"),
            (3, "failed"),
            (4, "hung up"),
        ]
        assert kept["turns"][0]["citations"] == full  # the copy's, whole
        [(begun,)] = conn.execute(
            "SELECT id FROM conversations WHERE continuation = %s", (place_key("voice", "CA-b"),)
        ).fetchall()
        made = get_conversation(conn, begun)
        assert made is not None
        assert (made["channel"], made["participant_hash"], made["turn_count"]) == (
            "voice",
            caller_hash("+15550002"),
            1,
        )
        # every turn reads as GET /conversations/{id} shows it
        for conversation_read in (kept, made):
            converter.structure(conversation_read, Conversation)
        assert get_conversation(conn, chat)["turns"] == []  # another channel's: untouched


def test_jobs_keep_their_status_and_may_then_be_cancelled(empty_database_url):
    """Migration 025: the jobs stay as they were, none asked to stop; 'cancelled' is a
    status a job may now have."""
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrated_to(conn, 24)
        conn.execute(
            """INSERT INTO jobs (kind, status, max_attempts) VALUES ('ingest', 'done', 5),
                                                                   ('ingest', 'queued', 5)"""
        )
        assert apply_migrations(conn)[0] == "025_job_cancellation"
        rows = conn.execute("SELECT status, cancel_requested_at FROM jobs ORDER BY id").fetchall()
        assert rows == [("done", None), ("queued", None)]
        conn.execute("UPDATE jobs SET status = 'cancelled' WHERE status = 'queued'")
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE jobs SET status = 'paused'")


def test_turns_are_unrated_and_may_then_be_rated_up_or_down(empty_database_url):
    """Migration 026: the turns stay as they were, none rated; a turn may then be rated
    up or down, and nothing else."""
    at = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrated_to(conn, 25)
        [(conversation,)] = conn.execute(
            """INSERT INTO conversations (channel, started_at, updated_at, turn_count)
               VALUES ('chat', %s, %s, 1) RETURNING id""",
            (at, at),
        ).fetchall()
        conn.execute(
            """INSERT INTO conversation_turns (conversation_id, turn, question, answer,
                                               outcome, created_at)
               VALUES (%s, 1, 'Hours?', 'From 9 am. [1]', 'answered', %s)""",
            (conversation, at),
        )
        assert apply_migrations(conn)[0] == "026_turn_feedback"
        read = get_conversation(conn, conversation)
        assert read is not None
        [turn] = converter.structure(read, Conversation).turns
        assert (turn.answer, turn.feedback, turn.feedback_at) == ("From 9 am. [1]", None, None)
        assert set_feedback(conn, conversation, 1, "down", at)
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE conversation_turns SET feedback = 'meh'")


def test_rated_turns_keep_their_rating_without_a_comment_and_may_then_say_why(
    empty_database_url,
):
    """Migration 030: a turn rated before it keeps its rating, with no comment; a rating
    may then come with one, and taking the rating back takes it too."""
    at = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrated_to(conn, 29)
        [(conversation,)] = conn.execute(
            """INSERT INTO conversations (channel, started_at, updated_at, turn_count)
               VALUES ('web', %s, %s, 1) RETURNING id""",
            (at, at),
        ).fetchall()
        conn.execute(
            """INSERT INTO conversation_turns (conversation_id, turn, question, answer,
                                               outcome, created_at, feedback, feedback_at)
               VALUES (%s, 1, 'Hours?', 'From 9 am. [1]', 'answered', %s, 'up', %s)""",
            (conversation, at, at),
        )
        assert apply_migrations(conn)[0] == "030_feedback_comment"

        def rated() -> tuple[str | None, str | None]:
            read = get_conversation(conn, conversation)
            assert read is not None
            [turn] = converter.structure(read, Conversation).turns
            return turn.feedback, turn.feedback_comment

        assert rated() == ("up", None)
        assert set_feedback(conn, conversation, 1, "down", at, "Closed at 9.") == "web"
        assert rated() == ("down", "Closed at 9.")
        assert set_feedback(conn, conversation, 1, None, at) == "web"
        assert rated() == (None, None)
