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
    AnswerBroken,
    BadReply,
    EmbeddingFailed,
    ProviderRejected,
    attempt_of,
)

log = logging.getLogger(__name__)
OnDelta = Callable[[str], Awaitable[None]]
#: what an answerer's ``stream(request)`` yields: text deltas, then (when the provider
#: reported them) the call's token counts, once, after the last delta
StreamItem = str | TokenUsage


async def embed(embedder: Any, texts: Sequence[str], purpose: str) -> list[list[float]]:
    """The embedder's vectors, one per text; EmbeddingFailed when the provider fails, its
    reply included (no vectors, vectors that are not lists of numbers, too few of them)."""
    try:
        vectors = await embedder.embed(texts, purpose)
        if len(vectors) != len(texts):
            raise BadReply(f"{len(vectors)} vectors for {len(texts)} texts")
    except Exception as error:
        attempt = attempt_of(embedder.name, error)
        if attempt is None:
            raise
        log.warning("embedding provider %s", attempt.describe())
        raise EmbeddingFailed(attempt) from error
    return vectors


async def generate_with_fallback(chain: Iterable[Any], request: Generate, timeout: float) -> Reply:
    """The first reply of the chain's providers, tried in order; each attempt, retries
    included, gets at most ``timeout`` seconds. A reply without any text is a failure of its
    provider like any other. Raises AllProvidersFailed or ProviderRejected."""
    attempts: list[Attempt] = []
    for answerer in able(chain, request):
        try:
            with trio.fail_after(timeout):
                reply: Reply = await answerer.generate(request)
            if not reply.text.strip():
                raise BadReply("no text", status=None)  # a provider that did not say so itself
        except Exception as error:
            _record(attempts, answerer.name, error)
        else:
            return reply
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
    while they have not, or when the provider reports none. A provider failing after the
    first delta raises AnswerBroken (a bug of ours raises as itself).
    """

    provider: str
    model: str
    _first: str
    _rest: AsyncGenerator[StreamItem, None]
    usage: TokenUsage | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        yield self._first
        try:
            async for item in self._rest:
                if isinstance(item, TokenUsage):
                    self.usage = item
                elif item:
                    yield item
        except Exception as error:
            attempt = attempt_of(self.provider, error)
            if attempt is None:
                raise
            log.warning("answering provider %s after its first words", attempt.describe())
            raise AnswerBroken(attempt) from error

    async def aclose(self) -> None:
        await self._rest.aclose()

    async def __aenter__(self) -> OpenedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def open_stream(chain: Iterable[Any], request: Generate, timeout: float) -> OpenedStream:
    """Start streaming from the chain: a provider failing before its first delta moves on to
    the next (rule 6), and so does one whose stream ends without any text; once a delta is
    out, a failure is the stream's and raises from it. Each provider gets ``timeout``
    seconds to produce its first delta."""
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
    """The text up to the first delta that is not blank, and the token counts when they came
    before it; BadReply when the stream ends without any (a provider that did not say so)."""
    usage, blank = None, ""
    while (item := await anext(items, None)) is not None:
        if isinstance(item, TokenUsage):
            usage = item
        elif item.strip():
            return blank + item, usage
        else:
            blank += item
    raise BadReply("no text", status=None)


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
    attempt = attempt_of(provider, error)
    if attempt is None:
        raise error
    attempts.append(attempt)
    if not moves_on(attempt.failure):
        raise ProviderRejected(attempts) from error
    log.warning("answering provider %s", attempts[-1].describe())
    log.debug("%s failed", provider, exc_info=error)
