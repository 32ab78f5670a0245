"""Customers' questions grouped by the need they express, for GET /insights/gaps and
GET /insights/top-questions: which questions count as gaps, the groups
(``ragcore.insights.clustering``) with what the owner reads of each, and whether an
owner's answer covers a group.

A question is a **gap** when it was not answered (``not_found``), its answer was rated
down (``disliked``), or it was handed to a person (``handed_off``: the turn that handed
the conversation over, or a message a person answered): but not a plain request for a
person ("can I talk to someone?", ``ragcore.handoff.asking``), which expresses no need
the documents could meet.

A group is **covered** when an owner's answer would be served for one of its questions:
word for word, or as near as the embedder's serve threshold
(``ragcore.answers.matching``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import attrs
import numpy as np

from ragcore.answers.matching import normalized
from ragcore.handoff.asking import asks_for_person
from ragcore.insights.clustering import GROUP_THRESHOLD, cluster, representative, unit_vectors

MAX_EXAMPLES = 5
MAX_CONVERSATIONS = 5
#: the latest questions grouped at most, per request (grouping compares every pair)
MAX_INSIGHT_QUESTIONS = 2000
REASONS = ("not_found", "disliked", "handed_off")


@attrs.frozen
class AskedQuestion:
    """A question as recorded on a turn."""

    question: str
    channel: str
    asked_at: datetime
    conversation_id: int
    outcome: str
    feedback: str | None = None


def gap_reason(asked: AskedQuestion) -> str | None:
    """Why the question is a gap (one of REASONS), or None when it is not one."""
    if asked.outcome in ("handed_off", "to_person"):
        return None if asks_for_person(asked.question) else "handed_off"
    if asked.feedback == "down":
        return "disliked"
    if asked.outcome == "not_found":
        return "not_found"
    return None


@attrs.frozen
class AnswerQuestion:
    """A question an owner's answer covers: its answer, its words, its vector (None:
    not embedded in this space)."""

    answer_id: int
    normalized: str
    vector: Sequence[float] | None


@attrs.frozen
class QuestionGroup:
    question: str
    count: int
    examples: tuple[str, ...]
    channels: tuple[str, ...]
    last_seen: datetime
    reasons: dict[str, int]
    answer_id: int | None
    conversations: tuple[int, ...]

    @property
    def answered(self) -> bool:
        return self.answer_id is not None


def group_questions(
    asked: Sequence[AskedQuestion],
    vectors: Sequence[Sequence[float]],
    answers: Sequence[AnswerQuestion] = (),
    serve_at: float | None = None,
    threshold: float = GROUP_THRESHOLD,
) -> list[QuestionGroup]:
    """The questions (``vectors[i]`` is ``asked[i]``'s) in groups, most asked first (the
    latest asked first among equals); each group covered by the owner's answer one of its
    questions would be served (``serve_at``: the embedder's serve threshold; None: word
    for word only)."""
    if not asked:
        return []
    groups = cluster(vectors, threshold)
    matrix = np.asarray(vectors, dtype=np.float64)
    found = [
        _summary([asked[i] for i in members], asked[representative(vectors, members)])
        for members in groups
    ]
    covering = _covering(asked, matrix, groups, answers, serve_at)
    found = [
        attrs.evolve(group, answer_id=answer) for group, answer in zip(found, covering, strict=True)
    ]
    return sorted(found, key=lambda g: (-g.count, -g.last_seen.timestamp(), g.question))


def _summary(members: list[AskedQuestion], central: AskedQuestion) -> QuestionGroup:
    latest = sorted(members, key=lambda a: a.asked_at, reverse=True)
    examples: list[str] = []
    seen: set[str] = set()
    for item in latest:
        key = normalized(item.question)
        if key not in seen and len(examples) < MAX_EXAMPLES:
            seen.add(key)
            examples.append(item.question)
    conversations: list[int] = []
    for item in latest:
        if item.conversation_id not in conversations and len(conversations) < MAX_CONVERSATIONS:
            conversations.append(item.conversation_id)
    reasons = Counter(r for r in (gap_reason(m) for m in members) if r is not None)
    return QuestionGroup(
        question=central.question,
        count=len(members),
        examples=tuple(examples),
        channels=tuple(sorted({m.channel for m in members})),
        last_seen=latest[0].asked_at,
        reasons={reason: reasons.get(reason, 0) for reason in REASONS},
        answer_id=None,
        conversations=tuple(conversations),
    )


def _covering(
    asked: Sequence[AskedQuestion],
    matrix: np.ndarray,
    groups: list[list[int]],
    answers: Sequence[AnswerQuestion],
    serve_at: float | None,
) -> list[int | None]:
    """Per group, the owner's answer that covers it (None: none)."""
    if not answers:
        return [None] * len(groups)
    by_words = {a.normalized: a.answer_id for a in answers}
    embedded = [a for a in answers if a.vector is not None and len(a.vector) == matrix.shape[1]]
    similar = None
    if serve_at is not None and embedded:
        theirs = unit_vectors([a.vector for a in embedded if a.vector is not None])
        similar = unit_vectors(matrix) @ theirs.T
    covering: list[int | None] = []
    for members in groups:
        answer = next(
            (
                by_words[k]
                for k in (normalized(asked[i].question) for i in members)
                if k in by_words
            ),
            None,
        )
        if answer is None and similar is not None and serve_at is not None:
            rows = similar[members]
            best = np.unravel_index(int(np.argmax(rows)), rows.shape)
            if rows[best] >= serve_at:
                answer = embedded[int(best[1])].answer_id
        covering.append(answer)
    return covering
