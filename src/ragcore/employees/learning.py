"""Learning from past interactions (rule 4): a role learns the questions it is asked
again and again, and the documents that answered them.

The rule, in full:

1. **What is recorded.** An answer given as a role, grounded in at least one cited
   source (not a "the documents do not answer", not stopped by a budget, not judged
   ungrounded), is recorded: the question, its vector, the cited documents and who
   asked, as a SHA-256 of the asker's identifier (the channel's user, or the ``user``
   of ``POST /chat``; requests without one are all the same asker, ``api``).
2. **One chatty user cannot flood.** An asker is recorded at most ``per_asker_daily``
   times a day per role; what is over that is not recorded at all. A pattern needs
   ``min_askers`` different askers, so one user asking a hundred times teaches nothing.
3. **When a pattern is learned.** When the questions of the last ``window_days`` days
   nearest the new one (cosine similarity at least ``similarity``) come from at least
   ``min_askers`` askers, the role learns one item: the cluster's earliest question
   and the documents cited most often for it (``pattern_text``), source ``learned``,
   tag ``frequent-question``.
4. **No duplicates.** The questions that taught a pattern are spent: the earliest is
   kept as the pattern's marker, the others are deleted. A new question near a
   marker teaches nothing more, and the memory's unique whole-text hash refuses the
   same text twice in any case. When the owner deletes a learned item, its marker goes
   with it, so the pattern is learned again only if enough people ask again.
5. **Bounded.** A role keeps at most ``max_learned`` learned items: past that, the least
   important, then the oldest, are removed. Recorded questions older than the window
   are deleted, except the one each learned pattern came from.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Generator, Sequence
from datetime import datetime
from typing import Any, TypeAlias

import attrs

from ragcore.effects import Effect
from ragcore.employees.memory import MAX_MEMORY_CHARS, MemoryItem, NewMemory
from ragcore.errors import InvalidInput

ANONYMOUS = "api"
PATTERN_TAG = "frequent-question"
MAX_ASKER_CHARS = 128
MAX_QUESTION_IN_PATTERN = 300
MAX_DOCUMENTS_IN_PATTERN = 3


@attrs.frozen
class LearningPolicy:
    min_askers: int = 3
    similarity: float = 0.8
    window_days: int = 30
    per_asker_daily: int = 20
    max_learned: int = 100


@attrs.frozen
class Interaction:
    """One answered question, as recorded (see rule 1)."""

    role: str
    asker_hash: str
    question: str
    vector: tuple[float, ...]
    documents: tuple[str, ...]


@attrs.frozen
class PastQuestion:
    """A recorded question near a new one."""

    id: int
    asker_hash: str
    question: str
    documents: tuple[str, ...]
    at: datetime


@attrs.frozen
class History:
    """What the store found when it recorded an interaction: ``recorded`` False when the
    asker was over their daily limit; ``similar``, the recorded questions of the window
    nearest it (itself included); ``known`` when a learned pattern is already near it."""

    recorded: bool
    similar: tuple[PastQuestion, ...] = ()
    known: bool = False


@attrs.frozen
class Lesson:
    """A pattern to learn; the recorded question it came from (kept as its marker) and
    the other recorded questions that taught it (spent: deleted once it is learned)."""

    memory: NewMemory
    source_id: int
    spent_ids: tuple[int, ...] = ()


# The effects of learning: recording an answered question, learning a pattern.


@attrs.frozen
class RecordInteraction(Effect[History]):
    """Record an answered question for learning (``ragcore.employees.learning``, rule 1
    and 2), unless its asker is over ``policy.per_asker_daily`` today, and find the
    recorded questions of the last ``policy.window_days`` days nearest it (itself
    included, at least ``policy.similarity``), and whether a learned pattern is near it.
    Recorded questions older than the window are deleted, except those patterns came
    from. Result: ``History``.
    """

    interaction: Interaction
    policy: LearningPolicy


@attrs.frozen
class LearnPattern(Effect[MemoryItem | None]):
    """Store ``lesson`` as a learned memory of ``role`` (nothing when the role holds the
    same text), mark the recorded question it came from, and keep the role's learned
    items to ``max_learned``, least important and oldest removed first. Result: the
    stored ``MemoryItem``, or None."""

    role: str
    lesson: Lesson
    max_learned: int


def asker_hash(asker: str | None) -> str:
    """Who asked, kept only as a hash: the same person gives the same hash."""
    return hashlib.sha256((asker or ANONYMOUS).encode("utf-8")).hexdigest()


ASKER_REFUSAL = "must be text naming the end user, when given"


def check_asker(value: Any) -> str | None:
    """The ``user`` of a chat request: optional text of at most ``MAX_ASKER_CHARS``."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("user", ASKER_REFUSAL)
    if len(value) > MAX_ASKER_CHARS:
        raise InvalidInput("user", f"has {len(value)} characters; the limit is {MAX_ASKER_CHARS}")
    return value.strip()


def interaction(
    role: str | None,
    asker: str | None,
    question: str,
    vector: Sequence[float],
    cited_documents: Sequence[str],
    grounded: bool | None,
) -> Interaction | None:
    """The interaction to record for an answer (rule 1), or None when it teaches nothing."""
    if role is None or not cited_documents or grounded is False:
        return None
    documents = tuple(dict.fromkeys(cited_documents))
    return Interaction(role, asker_hash(asker), question, tuple(vector), documents)


def pattern_text(question: str, documents: Sequence[str]) -> str:
    """The learned item's text: the question as people ask it and where it is answered."""
    asked = " ".join(question.split())
    if len(asked) > MAX_QUESTION_IN_PATTERN:
        asked = asked[: MAX_QUESTION_IN_PATTERN - 1].rstrip() + "…"
    text = f'People often ask: "{asked}".'
    if documents:
        text += " It is answered in: " + ", ".join(documents) + "."
    return text[:MAX_MEMORY_CHARS]


def lesson(history: History, policy: LearningPolicy) -> Lesson | None:
    """Rule 3 and 4: the pattern the recorded questions teach, or None."""
    if not history.recorded or history.known:
        return None
    askers = {past.asker_hash for past in history.similar}
    if len(askers) < policy.min_askers:
        return None
    earliest = min(history.similar, key=lambda past: (past.at, past.id))
    cited = Counter(name for past in history.similar for name in past.documents)
    documents = [name for name, _ in cited.most_common(MAX_DOCUMENTS_IN_PATTERN)]
    memory = NewMemory(
        text=pattern_text(earliest.question, documents),
        tags=(PATTERN_TAG,),
        source="learned",
    )
    spent = tuple(past.id for past in history.similar if past.id != earliest.id)
    return Lesson(memory, earliest.id, spent)


#: what learning from an answered question asks for
LearnEffect: TypeAlias = RecordInteraction | LearnPattern


def learn_from(
    record: Interaction, policy: LearningPolicy
) -> Generator[LearnEffect, Any, MemoryItem | None]:
    """Record ``record`` and learn the pattern it completes, if any: the learned item."""
    history: History = yield RecordInteraction(record, policy)
    found = lesson(history, policy)
    if found is None:
        return None
    learned: MemoryItem | None = yield LearnPattern(record.role, found, policy.max_learned)
    return learned
