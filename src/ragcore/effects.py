"""Effect requests: what a pipeline asks the outside world to do.

A pipeline is a generator that yields one of these frozen values and receives
the result back through ``send()``; its return value is the outcome. The runner
in ``ragio.runner`` executes each effect; tests in ``tests/core`` answer them
with recorded results instead. Each class documents the result it expects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ragcore.chat.prompts import Prompt
from ragcore.knowledge.chunking import Chunk
from ragcore.usage import Caps, TokenUsage

if TYPE_CHECKING:  # learning builds on role memory, which yields these effects
    from ragcore.employees.learning import Interaction, LearningPolicy, Lesson


@attrs.frozen
class Embed:
    """Embed texts. Result: a list of vectors (lists of floats), one per text, in order.

    ``purpose`` lets providers that distinguish queries from documents do so.
    """

    texts: tuple[str, ...]
    purpose: str = "document"  # "document" or "query"


@attrs.frozen
class SearchChunks:
    """The chunks that best match a question: hybrid search by ``vector`` (the question's
    embedding) and ``text`` (the question, for full-text search), fused by reciprocal rank
    fusion (see ``ragcore.knowledge.retrieval``). Only chunks of ``document_ids`` when given.

    Result: at most ``limit`` ``ragcore.knowledge.retrieval.RetrievedHit``s (``Hit``s that
    carry the evidence that found them), best first.
    """

    vector: tuple[float, ...]
    text: str
    limit: int
    document_ids: tuple[int, ...] | None = None


@attrs.frozen
class DetectLanguage:
    """Guess the language of ``text``. Result: ``ragcore.language.LanguageGuess``es, best first."""

    text: str


@attrs.frozen
class Generate:
    """Ask the answering provider. Result: a ``Reply``."""

    prompt: Prompt
    max_output_tokens: int
    temperature: float
    #: what the text is for: ``"answer"`` (a grounded answer), or a task only a language
    #: model can do (``"check"``, ``"summary"``); the offline extractive answerer writes
    #: answers only, so the provider chain passes it over for the others
    task: str = "answer"
    #: False holds the text back from the user until it is whole (reasoning mode: the
    #: reasoning is never shown, and the final answer is checked before it is)
    stream: bool = True


@attrs.frozen
class Reply:
    text: str
    provider: str
    model: str
    #: tokens as the provider reported them; None when it reported none
    usage: TokenUsage | None = None


@attrs.frozen
class FindDocuments:
    """Look documents up by content hash. Result: for each hash, its
    ``ragcore.knowledge.documents.StoredDocument`` or None, in order."""

    content_hashes: tuple[str, ...]


@attrs.frozen
class StoreDocument:
    """A document to store with its chunks and their vectors (see StoreDocuments).

    ``content_type`` and ``size_bytes`` describe the file the text was read from.
    """

    name: str
    content_hash: str
    text: str
    chunks: tuple[Chunk, ...]
    vectors: tuple[tuple[float, ...], ...]
    content_type: str = "text/plain"
    size_bytes: int = 0


@attrs.frozen
class StoreDocuments:
    """Store documents, each with all its chunks, in one transaction: all or nothing.

    Result: a ``ragcore.knowledge.documents.StoredDocument`` for each, in order (the
    one already stored when the same content was stored meanwhile). A group in one
    step is what makes bulk ingestion fast (scripts/bench_ingest.py).
    """

    documents: tuple[StoreDocument, ...]


@attrs.frozen
class CheckBudget:
    """Whether a call of at least ``tokens`` (its prompt's least size) could still fit under
    the caps by what was used so far, before any provider is asked (embedding included).

    Result: ``ragcore.usage.Allowed`` or ``ragcore.usage.Capped``.
    """

    role: str | None
    tokens: int
    caps: Caps


@attrs.frozen
class ReserveTokens:
    """Hold a call's tokens against the caps, atomically with every other reservation: its
    prompt, estimated at ``prompt_tokens`` (the runner calibrates it with the provider's
    counts of recent calls, ``ragcore.usage.prompt_hold``), and its output, as much of
    ``max_output_tokens`` as is left, not less than ``min_output_tokens``
    (``ragcore.usage.fit_hold``); a call that would fit once calls in flight settle waits
    a little for them.

    Result: ``ragcore.usage.Reservation`` (with the output allowed) or
    ``ragcore.usage.Capped``.
    """

    role: str | None
    prompt_tokens: int
    caps: Caps
    max_output_tokens: int
    min_output_tokens: int


@attrs.frozen
class SettleTokens:
    """Replace a reservation with what the call used, in the usage ledger. Result: None."""

    reservation_id: int
    provider: str
    model: str
    usage: TokenUsage


@attrs.frozen
class ReleaseTokens:
    """Drop a reservation whose call never ran or failed. Result: None."""

    reservation_id: int


@attrs.frozen
class FetchRoleMemory:
    """The role memory a role context is assembled from: every ``owner`` and ``profile``
    item of ``role`` (the business profile record among them, as ``profile`` items made
    by ``ragcore.employees.profile.profile_items``), and its ``learned_limit`` learned
    items nearest ``vector`` (the query's embedding), each with its ``similarity``.

    Result: ``ragcore.employees.memory.MemoryItem``s, in any order.
    """

    role: str
    vector: tuple[float, ...]
    learned_limit: int


@attrs.frozen
class RecordInteraction:
    """Record an answered question for learning (``ragcore.employees.learning``, rule 1
    and 2), unless its asker is over ``policy.per_asker_daily`` today, and find the
    recorded questions of the last ``policy.window_days`` days nearest it (itself
    included, at least ``policy.similarity``), and whether a learned pattern is near it.
    Recorded questions older than the window are deleted, except those patterns came
    from. Result: ``ragcore.employees.learning.History``.
    """

    interaction: Interaction
    policy: LearningPolicy


@attrs.frozen
class LearnPattern:
    """Store ``lesson`` as a learned memory of ``role`` (nothing when the role holds the
    same text), mark the recorded question it came from, and keep the role's learned
    items to ``max_learned``, least important and oldest removed first. Result: the
    stored ``MemoryItem``, or None."""

    role: str
    lesson: Lesson
    max_learned: int
