"""Answering with fallback (rule 6) and embedding, with failures reported clearly.

The rules (the order, which failures move on) are ragcore.chat.fallback's; here the
providers are called, each attempt under the timeout, and failures classified.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import attrs
import trio

from ragcore.chat.fallback import Attempt, moves_on
from ragcore.effects import Generate, Reply
from ragcore.usage import TokenUsage
from ragio.providers.failures import (
    AllProvidersFailed,
    EmbeddingFailed,
    ProviderRejected,
    classify_failure,
)

log = logging.getLogger(__name__)
OnDelta = Callable[[str], Awaitable[None]]
#: what an answerer's ``stream(request)`` yields: text deltas, then (when the provider
#: reported them) the call's token counts, once, after the last delta
StreamItem = str | TokenUsage


async def embed(embedder: Any, texts: Sequence[str], purpose: str) -> list[list[float]]:
    """The embedder's vectors, one per text; EmbeddingFailed when the provider fails."""
    try:
        vectors = await embedder.embed(texts, purpose)
    except Exception as error:
        classified = classify_failure(error)
        if classified is None:
            raise
        attempt = Attempt(embedder.name, *classified)
        log.warning("embedding provider %s", attempt.describe())
        raise EmbeddingFailed(attempt) from error
    if len(vectors) != len(texts):
        raise RuntimeError(
            f"embedding provider {embedder.name} returned {len(vectors)} vectors "
            f"for {len(texts)} texts"
        )
    return vectors


async def generate_with_fallback(chain: Iterable[Any], request: Generate, timeout: float) -> Reply:
    """The first reply of the chain's providers, tried in order; each attempt, retries
    included, gets at most ``timeout`` seconds. Raises AllProvidersFailed or ProviderRejected."""
    attempts: list[Attempt] = []
    for answerer in able(chain, request):
        try:
            with trio.fail_after(timeout):
                return await answerer.generate(request)
        except Exception as error:
            _record(attempts, answerer.name, error)
    raise AllProvidersFailed(attempts)


async def stream_with_fallback(
    chain: Iterable[Any], request: Generate, timeout: float, on_delta: OnDelta
) -> Reply:
    """Stream the reply to ``on_delta``; return it whole, with the token counts the provider
    reported while streaming (None when it reported none: the pipeline then estimates them)."""
    pieces: list[str] = []
    async with await open_stream(chain, request, timeout) as opened:
        async for delta in opened:
            pieces.append(delta)
            await on_delta(delta)
    return Reply(
        "".join(pieces), provider=opened.provider, model=opened.model, usage=opened.usage
    )


@attrs.define
class OpenedStream:
    """A streamed reply from the first provider of the chain that produced a delta.

    ``provider`` and ``model`` say who is answering; iterate for the text deltas, and
    ``aclose()`` when stopping early (``async with`` does it). ``usage`` is the token
    counts the provider reported, set once they arrive (after the last delta); None
    while they have not, or when the provider reports none.
    """

    provider: str
    model: str
    _first: str
    _rest: AsyncGenerator[StreamItem, None]
    usage: TokenUsage | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        if self._first:  # "" when the provider streamed no text at all
            yield self._first
        async for item in self._rest:
            if isinstance(item, TokenUsage):
                self.usage = item
            elif item:
                yield item

    async def aclose(self) -> None:
        await self._rest.aclose()

    async def __aenter__(self) -> OpenedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def open_stream(chain: Iterable[Any], request: Generate, timeout: float) -> OpenedStream:
    """Start streaming from the chain: a provider failing before its first delta moves on to
    the next (rule 6); once a delta is out, a failure is the stream's and raises from it.
    Each provider gets ``timeout`` seconds to produce its first delta."""
    attempts: list[Attempt] = []
    for answerer in able(chain, request):
        deltas = _deltas(answerer, request)
        try:
            with trio.fail_after(timeout):
                first, usage = await _first_delta(deltas)
        except Exception as error:
            await deltas.aclose()
            _record(attempts, answerer.name, error)
            continue
        return OpenedStream(answerer.name, answerer.model, first, deltas, usage)
    raise AllProvidersFailed(attempts)


async def _first_delta(items: AsyncGenerator[StreamItem, None]) -> tuple[str, TokenUsage | None]:
    """The first non-empty text delta ("" when the stream ends without one), and the token
    counts when they came before it (a reply with no text at all)."""
    usage = None
    while (item := await anext(items, None)) is not None:
        if isinstance(item, TokenUsage):
            usage = item
        elif item:
            return item, usage
    return "", usage


def able(chain: Iterable[Any], request: Generate) -> list[Any]:
    """The chain's answerers that can do the request's task (``Generate.task``); an
    answerer without ``tasks`` is a language model and can do them all."""
    return [a for a in chain if request.task in getattr(a, "tasks", (request.task,))]


def _deltas(answerer: Any, request: Generate) -> AsyncGenerator[StreamItem, None]:
    if hasattr(answerer, "stream"):
        return answerer.stream(request)

    async def whole() -> AsyncGenerator[StreamItem, None]:  # an answerer that cannot stream
        reply = await answerer.generate(request)
        yield reply.text
        if reply.usage is not None:  # the offline answerer's 0/0, not an estimate
            yield reply.usage

    return whole()


def _record(attempts: list[Attempt], provider: str, error: Exception) -> None:
    """Add the failed attempt, or raise: the error itself when it is no provider failure (a bug),
    ProviderRejected when the failure does not move on to the next provider."""
    classified = classify_failure(error)
    if classified is None:
        raise error
    kind, status = classified
    attempts.append(Attempt(provider, kind, status))
    if not moves_on(kind):
        raise ProviderRejected(attempts) from error
    log.warning("answering provider %s", attempts[-1].describe())
    log.debug("%s failed", provider, exc_info=error)
