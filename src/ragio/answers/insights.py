"""GET /insights/gaps and GET /insights/top-questions: the recorded questions read, their
vectors found (``question_vectors``, filled as questions are answered) or embedded, and
grouped by the core (``ragcore.insights.groups``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg

from ragcore.answers.matching import thresholds
from ragcore.insights.groups import (
    MAX_INSIGHT_QUESTIONS,
    AnswerQuestion,
    AskedQuestion,
    QuestionGroup,
    gap_reason,
    group_questions,
)
from ragio.answers import store
from ragio.answers.store import text_hash
from ragio.db.pool import in_thread
from ragio.db.vectors import vector_param
from ragio.providers.chain import embed
from ragio.service import Service

#: what a gap may be (ragcore.insights.groups.gap_reason decides)
_GAP_WHERE = "(t.outcome IN ('not_found', 'handed_off', 'to_person') OR t.feedback = 'down')"


def asked_questions(
    conn: psycopg.Connection,
    gaps: bool,
    channel: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int = MAX_INSIGHT_QUESTIONS,
) -> list[AskedQuestion]:
    """The latest ``limit`` customers' questions (the gaps' candidates with ``gaps``)."""
    where = ["t.author <> 'person'", "t.question <> ''"]
    params: dict[str, Any] = {"limit": int(limit)}
    if gaps:
        where.append(_GAP_WHERE)
    if channel is not None:
        where.append("c.channel = %(channel)s")
        params["channel"] = channel
    if since is not None:
        where.append("t.created_at >= %(since)s")
        params["since"] = since
    if until is not None:
        where.append("t.created_at < %(until)s")
        params["until"] = until
    rows = conn.execute(
        f"""SELECT t.question, c.channel, t.created_at, t.conversation_id, t.outcome, t.feedback
              FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
             WHERE {" AND ".join(where)}
             ORDER BY t.created_at DESC, t.conversation_id DESC, t.turn DESC
             LIMIT %(limit)s""",
        params,
    ).fetchall()
    return [AskedQuestion(*row) for row in rows]


def known_vectors(
    conn: psycopg.Connection, hashes: Sequence[str], dimensions: int
) -> dict[str, list[float]]:
    rows = conn.execute(
        """SELECT text_hash, embedding::real[] FROM question_vectors
            WHERE text_hash = ANY(%s) AND vector_dims(embedding) = %s""",
        (list(hashes), int(dimensions)),
    ).fetchall()
    return {key: list(vector) for key, vector in rows}


@in_thread
def keep_vectors(conn: psycopg.Connection, pairs: Sequence[tuple[str, Sequence[float]]]) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO question_vectors (text_hash, embedding) VALUES (%s, %s::vector)
               ON CONFLICT (text_hash) DO UPDATE SET embedding = excluded.embedding""",
            [(key, vector_param(vector)) for key, vector in pairs],
        )


async def question_groups(
    svc: Service,
    gaps: bool,
    filters: dict[str, Any],
    covered: bool | None,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    """A page of the groups (``QuestionGroups``' fields); ``covered``: only the groups an
    owner's answer covers (True), only the others (False), both (None)."""
    asked = await svc.database.run(
        asked_questions, gaps, filters["channel"], filters["since"], filters["until"]
    )
    if gaps:
        asked = [a for a in asked if gap_reason(a) is not None]
    space = svc.embedder.space
    vectors = await _vectors(svc, [a.question for a in asked], space.dimensions)
    answers = [
        AnswerQuestion(answer_id, words, vector)
        for answer_id, words, vector in await svc.database.run(
            store.answer_vectors, space.dimensions
        )
    ]
    measured = thresholds(space.provider, space.model)
    groups = group_questions(
        asked, vectors, answers, measured.serve if measured is not None else None
    )
    if covered is not None:
        groups = [g for g in groups if g.answered == covered]
    page = groups[offset : offset + limit]
    after = offset + len(page)
    return {
        "groups": [_shown(group) for group in page],
        "total": len(groups),
        "next_offset": after if page and after < len(groups) else None,
        "questions": len(asked),
    }


def _shown(group: QuestionGroup) -> dict[str, Any]:
    """A group as the API shows it (``ragcore.api.answers.QuestionGroup``)."""
    return attrs.asdict(group) | {
        "examples": list(group.examples),
        "channels": list(group.channels),
        "conversations": list(group.conversations),
        "answered": group.answered,
    }


async def _vectors(svc: Service, questions: Sequence[str], dimensions: int) -> list[list[float]]:
    """Each question's vector: as kept, or embedded now (and kept)."""
    keys = [text_hash(q) for q in questions]
    known = await svc.database.run(known_vectors, sorted(set(keys)), dimensions)
    missing = sorted({k: q for k, q in zip(keys, questions, strict=True) if k not in known}.items())
    if missing:  # an embedder's failure is its problem (EmbeddingFailed: 502 or 503)
        fresh = await embed(svc.embedder, [q for _, q in missing], "query")
        pairs = [(key, vector) for (key, _), vector in zip(missing, fresh, strict=True)]
        await svc.database.run(keep_vectors, pairs)
        known.update(pairs)
    return [known[k] for k in keys]
