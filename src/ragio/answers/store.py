"""The owner's answers in PostgreSQL (migration 031): written, edited and withdrawn with
every version kept, and matched against a question by its embedding.

Every write runs in one transaction, and matching reads the tables as they are: an edit
or a deletion counts from the next question on, on every replica. A question is claimed
by one answer at most (word for word, ``ragcore.answers.matching.normalized``): a second
claim is a ``Claimed`` conflict naming the answer that has it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from ragcore.answers.faq import FaqEntry
from ragcore.answers.matching import normalized
from ragio.db.pool import in_thread
from ragio.db.vectors import vector_param

_ANSWER_COLUMNS = ("id", "answer", "version", "created_at", "updated_at")
#: turns answered from an owner's answer as it is: no provider, and citing it
_SERVED = """SELECT count(*) FROM conversation_turns t
              WHERE t.provider IS NULL
                AND t.citations @> jsonb_build_array(jsonb_build_object('owner_answer_id', a.id))"""


class Claimed(Exception):
    """A question another answer already covers."""

    def __init__(self, question: str, answer_id: int):
        self.question = question
        self.answer_id = answer_id
        super().__init__(f"{question!r} is answered by answer {answer_id}")


def text_hash(question: str) -> str:
    """The key of a customer's question in ``question_vectors``."""
    return hashlib.sha256(" ".join(question.split()).encode("utf-8")).hexdigest()


def create(
    conn: psycopg.Connection,
    questions: Sequence[str],
    answer: str,
    vectors: Sequence[Sequence[float]] | None,
    now: datetime,
    change: str = "created",
    language: str | None = None,
) -> int:
    """A new answer covering ``questions`` (embedded as ``vectors``, None: not yet), in
    ``language`` (None: not known); its id. Claimed when another answer covers one of
    the questions."""
    with conn.transaction():
        _check_unclaimed(conn, questions, None)
        answer_id = _one(
            conn,
            """INSERT INTO owner_answers (answer, language, created_at, updated_at)
               VALUES (%s, %s, %s, %s) RETURNING id""",
            (answer, language, now, now),
        )
        _write_questions(conn, answer_id, questions, vectors)
        _write_version(conn, answer_id, 1, questions, answer, now, change)
    return int(answer_id)


def update(
    conn: psycopg.Connection,
    answer_id: int,
    questions: Sequence[str] | None,
    answer: str | None,
    vectors: Sequence[Sequence[float]] | None,
    now: datetime,
    change: str = "edited",
    language: str | None = None,
) -> bool:
    """Change the answer's text, its questions, or both, as a new version (nothing
    changed: no new version). False when there is no such answer (or it was deleted);
    Claimed when another answer covers one of the new questions."""
    with conn.transaction():
        row = conn.execute(
            """SELECT answer, version FROM owner_answers
                WHERE id = %s AND deleted_at IS NULL FOR UPDATE""",
            (answer_id,),
        ).fetchone()
        if row is None:
            return False
        old_answer, version = row
        old_questions = _questions_of(conn, answer_id)
        new_answer = old_answer if answer is None else answer
        new_questions = old_questions if questions is None else list(questions)
        if new_answer == old_answer and new_questions == old_questions:
            return True
        if questions is not None and new_questions != old_questions:
            _check_unclaimed(conn, new_questions, answer_id)
            conn.execute("DELETE FROM owner_answer_questions WHERE answer_id = %s", (answer_id,))
            _write_questions(conn, answer_id, new_questions, vectors)
        conn.execute(
            """UPDATE owner_answers
                  SET answer = %s, language = CASE WHEN %s THEN %s ELSE language END,
                      version = version + 1, updated_at = %s
                WHERE id = %s""",
            (new_answer, answer is not None, language, now, answer_id),
        )
        _write_version(conn, answer_id, version + 1, new_questions, new_answer, now, change)
    return True


def delete(conn: psycopg.Connection, answer_id: int, now: datetime) -> bool:
    """Withdraw the answer (its history stays); False when there is none."""
    with conn.transaction():
        row = conn.execute(
            """UPDATE owner_answers SET deleted_at = %s, updated_at = %s, version = version + 1
                WHERE id = %s AND deleted_at IS NULL RETURNING version, answer""",
            (now, now, answer_id),
        ).fetchone()
        if row is None:
            return False
        questions = _questions_of(conn, answer_id)
        _write_version(conn, answer_id, row[0], questions, row[1], now, "deleted")
        conn.execute("DELETE FROM owner_answer_questions WHERE answer_id = %s", (answer_id,))
    return True


def get(conn: psycopg.Connection, answer_id: int) -> dict[str, Any] | None:
    """The answer in force with its questions and every version, the latest first."""
    with conn.transaction():
        found = _answers(conn, "a.id = %s AND a.deleted_at IS NULL", (answer_id,), 1)
        if not found:
            return None
        versions = conn.execute(
            """SELECT version, questions, answer, changed_at, change
                 FROM owner_answer_versions WHERE answer_id = %s ORDER BY version DESC""",
            (answer_id,),
        ).fetchall()
    keys = ("version", "questions", "answer", "changed_at", "change")
    return found[0] | {"versions": [dict(zip(keys, row, strict=True)) for row in versions]}


def list_answers(conn: psycopg.Connection, limit: int, before: int | None) -> list[dict[str, Any]]:
    """The answers in force, latest written first."""
    where = "a.deleted_at IS NULL" + (" AND a.id < %s" if before is not None else "")
    return _answers(conn, where, (before,) if before is not None else (), limit)


def _answers(
    conn: psycopg.Connection, where: str, params: tuple[Any, ...], limit: int
) -> list[dict[str, Any]]:
    rows = conn.execute(
        f"""SELECT {", ".join(f"a.{c}" for c in _ANSWER_COLUMNS)},
                   coalesce((SELECT array_agg(q.question ORDER BY q.id)
                               FROM owner_answer_questions q WHERE q.answer_id = a.id),
                            '{{}}'),
                   ({_SERVED})
              FROM owner_answers a WHERE {where} ORDER BY a.id DESC LIMIT %s""",
        (*params, int(limit)),
    ).fetchall()
    return [
        dict(zip(_ANSWER_COLUMNS, row[:5], strict=True))
        | {"questions": list(row[5]), "served": int(row[6])}
        for row in rows
    ]


def import_faq(
    conn: psycopg.Connection,
    entries: Sequence[FaqEntry],
    vectors: Sequence[Sequence[Sequence[float]] | None],
    languages: Sequence[str | None],
    now: datetime,
) -> dict[str, Any]:
    """The FAQ's entries, all or none: an entry with a question some answer already
    covers rewrites that answer (its text and its questions, as a new version), the others
    are new answers. ``vectors``: each entry's questions', when embedded. Claimed (naming
    the entry's question) when an entry's questions belong to two different answers."""
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    ids: list[int] = []
    with conn.transaction():
        for entry, embedded, language in zip(entries, vectors, languages, strict=True):
            owners = _claims(conn, entry.questions, None)
            if len(set(owners.values())) > 1:
                question = next(iter(owners))
                raise Claimed(question, owners[question])
            if not owners:
                answer_id = create(
                    conn, entry.questions, entry.answer, embedded, now, "imported", language
                )
                counts["created"] += 1
            else:
                answer_id = next(iter(owners.values()))
                version = "SELECT version FROM owner_answers WHERE id = %s"
                before = _one(conn, version, (answer_id,))
                update(
                    conn,
                    answer_id,
                    entry.questions,
                    entry.answer,
                    embedded,
                    now,
                    "imported",
                    language,
                )
                after = _one(conn, version, (answer_id,))
                counts["updated" if after != before else "unchanged"] += 1
            ids.append(answer_id)
    return {**counts, "answers": ids}


def _one(conn: psycopg.Connection, query: str, params: tuple[Any, ...]) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def _questions_of(conn: psycopg.Connection, answer_id: int) -> list[str]:
    rows = conn.execute(
        "SELECT question FROM owner_answer_questions WHERE answer_id = %s ORDER BY id",
        (answer_id,),
    ).fetchall()
    return [row[0] for row in rows]


def _claims(
    conn: psycopg.Connection, questions: Sequence[str], except_id: int | None
) -> dict[str, int]:
    """Which of ``questions`` answers in force (but ``except_id``) already cover."""
    keys = {normalized(q): q for q in questions}
    rows = conn.execute(
        """SELECT q.normalized, q.answer_id FROM owner_answer_questions q
             JOIN owner_answers a ON a.id = q.answer_id AND a.deleted_at IS NULL
            WHERE q.normalized = ANY(%s) AND q.answer_id IS DISTINCT FROM %s
            ORDER BY q.id""",
        (list(keys), except_id),
    ).fetchall()
    return {keys[key]: int(owner) for key, owner in rows}


def _check_unclaimed(
    conn: psycopg.Connection, questions: Sequence[str], except_id: int | None
) -> None:
    claims = _claims(conn, questions, except_id)
    if claims:
        question, owner = next(iter(claims.items()))
        raise Claimed(question, owner)


def _write_questions(
    conn: psycopg.Connection,
    answer_id: int,
    questions: Sequence[str],
    vectors: Sequence[Sequence[float]] | None,
) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO owner_answer_questions (answer_id, question, normalized, embedding)
               VALUES (%s, %s, %s, %s::vector)""",
            [
                (
                    answer_id,
                    question,
                    normalized(question),
                    vector_param(vectors[i]) if vectors is not None else None,
                )
                for i, question in enumerate(questions)
            ],
        )


def _write_version(
    conn: psycopg.Connection,
    answer_id: int,
    version: int,
    questions: Sequence[str],
    answer: str,
    now: datetime,
    change: str,
) -> None:
    conn.execute(
        """INSERT INTO owner_answer_versions
               (answer_id, version, questions, answer, changed_at, change)
           VALUES (%s, %s, %s, %s, %s, %s)""",
        (answer_id, version, list(questions), answer, now, change),
    )


# -- matching ------------------------------------------------------------------------


def unembedded(conn: psycopg.Connection, dimensions: int) -> list[tuple[int, str]]:
    """The questions of answers in force not embedded in the current space."""
    return conn.execute(
        """SELECT q.id, q.question FROM owner_answer_questions q
             JOIN owner_answers a ON a.id = q.answer_id AND a.deleted_at IS NULL
            WHERE q.embedding IS NULL OR vector_dims(q.embedding) <> %s
            ORDER BY q.id""",
        (int(dimensions),),
    ).fetchall()


@in_thread
def set_embeddings(conn: psycopg.Connection, pairs: Sequence[tuple[int, Sequence[float]]]) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "UPDATE owner_answer_questions SET embedding = %s::vector WHERE id = %s",
            [(vector_param(vector), question_id) for question_id, vector in pairs],
        )


def nearest(
    conn: psycopg.Connection, question: str, vector: Sequence[float]
) -> tuple[dict[str, Any] | None, bool]:
    """The answer in force whose question is ``question`` word for word, else the one
    whose question is nearest ``vector``; and whether some question is not embedded in
    this space yet (then embed them and ask again). The customer's question's vector is
    kept for grouping questions (``question_vectors``)."""
    bound = vector_param(vector)
    with conn.transaction():
        # the kept vector is for grouping questions later: its commit need not wait for the
        # disk (~3 ms here), and a crash of the database loses at most the last few
        conn.execute("SET LOCAL synchronous_commit TO OFF")
        conn.execute(
            """INSERT INTO question_vectors (text_hash, embedding) VALUES (%s, %s::vector)
               ON CONFLICT (text_hash) DO UPDATE SET embedding = excluded.embedding
               WHERE vector_dims(question_vectors.embedding) <> vector_dims(excluded.embedding)""",
            (text_hash(question), bound),
        )
        missing = conn.execute(
            """SELECT 1 FROM owner_answer_questions q
                 JOIN owner_answers a ON a.id = q.answer_id AND a.deleted_at IS NULL
                WHERE q.embedding IS NULL OR vector_dims(q.embedding) <> %s LIMIT 1""",
            (len(vector),),
        ).fetchone()
        row = conn.execute(
            """SELECT a.id, a.version, a.answer, q.question, 1.0, true, a.language
                 FROM owner_answer_questions q
                 JOIN owner_answers a ON a.id = q.answer_id AND a.deleted_at IS NULL
                WHERE q.normalized = %s ORDER BY q.id LIMIT 1""",
            (normalized(question),),
        ).fetchone()
        if row is None:
            row = conn.execute(
                """SELECT a.id, a.version, a.answer, q.question,
                          1 - (q.embedding <=> %(v)s::vector), false, a.language
                     FROM owner_answer_questions q
                     JOIN owner_answers a ON a.id = q.answer_id AND a.deleted_at IS NULL
                    WHERE q.embedding IS NOT NULL AND vector_dims(q.embedding) = %(dims)s
                    ORDER BY q.embedding <=> %(v)s::vector, q.id LIMIT 1""",
                {"v": bound, "dims": len(vector)},
            ).fetchone()
    keys = ("answer_id", "version", "answer", "question", "similarity", "exact", "language")
    found = dict(zip(keys, row, strict=True)) if row is not None else None
    return found, missing is not None


def answer_vectors(conn: psycopg.Connection, dimensions: int) -> list[tuple[int, str, list[float]]]:
    """Every question of the answers in force: its answer, its words, its vector (None
    when not embedded in this space)."""
    rows = conn.execute(
        """SELECT q.answer_id, q.normalized,
                  CASE WHEN vector_dims(q.embedding) = %s THEN q.embedding::real[] END
             FROM owner_answer_questions q
             JOIN owner_answers a ON a.id = q.answer_id AND a.deleted_at IS NULL
            ORDER BY q.id""",
        (int(dimensions),),
    ).fetchall()
    return [(int(a), n, list(v) if v is not None else None) for a, n, v in rows]  # type: ignore[misc]
