"""Embedding many texts: split to a provider's request limit, a few requests in flight.

Shared by the remote embedders, which differ only in how one batch is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any

import attrs
import trio

from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.usage import estimate_tokens, is_count
from ragio.providers.failures import BadReply

MAX_IN_FLIGHT = 4  # batch requests at once for one embed() call: fast, and polite to limits


@attrs.define
class EmbeddingTokens:
    """The tokens of one ``embed()`` call, batch by batch: as the provider reported them
    (OpenAI's ``usage.prompt_tokens``), else estimated from the batch's texts."""

    tokens: int = 0
    batches: int = 0  # batches counted: none when the embedder reports nothing

    def add(self, batch: Sequence[str], reported: Any) -> None:
        self.batches += 1
        self.tokens += reported if is_count(reported) else estimate(batch)


def estimate(texts: Sequence[str]) -> int:
    """Estimated tokens of ``texts``, each input counted on its own (4 characters a token)."""
    return sum(estimate_tokens(text) for text in texts)


#: the tally of the ``embed()`` call in progress (``ragio.providers.chain.embed`` sets it;
#: the batches of one call, sent in tasks of their own, share it)
EMBEDDING_TOKENS: ContextVar[EmbeddingTokens | None] = ContextVar("embedding_tokens", default=None)


def report_tokens(batch: Sequence[str], reported: Any) -> None:
    """Count a batch sent, with the tokens the provider reported for it (None or anything
    but a count: estimated), into the ``embed()`` call in progress, if any."""
    tally = EMBEDDING_TOKENS.get()
    if tally is not None:
        tally.add(batch, reported)


class EmbeddingDimensionsMismatch(RuntimeError):
    """The provider's vectors are not EMBEDDING_DIMENSIONS long."""


async def embed_in_batches(
    texts: Sequence[str],
    batch_size: int,
    send: Callable[[list[str]], Awaitable[list[list[float]]]],
    max_in_flight: int = MAX_IN_FLIGHT,
) -> list[list[float]]:
    """``send`` each batch of at most ``batch_size`` texts, ``max_in_flight`` at once;
    the vectors come back in the order of ``texts``. The first failure cancels the
    other batches and is raised as itself; a batch answered with more or fewer vectors than
    it sent texts is a BadReply."""
    batches = [list(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    results: list[list[list[float]]] = [[] for _ in batches]
    limiter = trio.CapacityLimiter(max_in_flight)

    async def one(index: int) -> None:
        async with limiter:
            vectors = await send(batches[index])
        if len(vectors) != len(batches[index]):
            raise BadReply(f"{len(vectors)} vectors for {len(batches[index])} texts")
        results[index] = vectors

    try:
        async with trio.open_nursery() as nursery:
            for index in range(len(batches)):
                nursery.start_soon(one, index)
    except BaseExceptionGroup as group:
        raise _first_leaf(group) from None
    return [vector for batch in results for vector in batch]


def check_vectors(vectors: Any, texts: int, container: str) -> list[list[float]]:
    """The reply's vectors, when they are what an embeddings API promises: ``texts`` lists,
    each of numbers and not empty; BadReply otherwise. ``container`` names the field that
    should hold them (``data``, ``embeddings``), for the reason. Of each vector the first and
    last entries are checked: checking all 3,072 would cost 80 ms for a batch of 512."""
    if not isinstance(vectors, list):
        raise BadReply(f"JSON without {container}")
    if not vectors:
        raise BadReply(f"an empty {container} list")
    if len(vectors) != texts:
        raise BadReply(f"{len(vectors)} vectors for {texts} texts")
    for vector in vectors:
        if not vector:
            raise BadReply("empty vectors")
        if not isinstance(vector, list) or not _NUMBERS.issuperset(map(type, _ends(vector))):
            raise BadReply("vectors that are not lists of numbers")
    return vectors


_NUMBERS = frozenset({float, int})  # not bool: True is no coordinate


def _ends(vector: list[Any]) -> tuple[Any, Any]:
    return vector[0], vector[-1]


def check_dimensions(
    vectors: Sequence[Sequence[float]], space: EmbeddingSpace, where: str, parameter: str
) -> None:
    """Refuse vectors of the wrong size, saying which setting to change."""
    for vector in vectors:
        if len(vector) != space.dimensions:
            raise EmbeddingDimensionsMismatch(
                f"{where} returned {len(vector)}-dimensional vectors for model "
                f"{space.model!r}, but EMBEDDING_DIMENSIONS is {space.dimensions}. "
                f"Set EMBEDDING_DIMENSIONS={len(vector)}, or use a model and server that "
                f"honour `{parameter}`."
            )


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
