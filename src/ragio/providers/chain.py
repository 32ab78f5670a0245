"""Answering with fallback (rule 6) and embedding, with failures reported clearly.

The rules (the order, which failures move on, when to stop) are ragcore.chat.fallback's
(``next_attempt``); here the provider it names is called, each attempt under the
timeout, and failures classified. Every call, failure and reply's tokens is counted
for GET /metrics (``ragio.metrics``), and each provider's last call kept for GET /status
(``ragio.providers.last_calls``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import attrs
import trio

from ragcore.chat.fallback import Attempt, GiveUp, TryProvider, moves_on, next_attempt
from ragcore.generation import Generate, ModelReply
from ragcore.usage import TokenUsage, measured_usage
from ragio import metrics, tracing
from ragio.keys import ASKING_KEY
from ragio.providers.batching import EMBEDDING_TOKENS, EmbeddingTokens, estimate
from ragio.providers.failures import (
    AllProvidersFailed,
    AnswerBroken,
    AnswerFailed,
    BadReply,
    EmbeddingFailed,
    ProviderRejected,
    attempt_of,
)
from ragio.providers.last_calls import EMBEDDING, LAST_CALLS

log = logging.getLogger(__name__)
OnDelta = Callable[[str], Awaitable[None]]
#: what an answerer's ``stream(request)`` yields: text deltas, then (when the provider
#: reported them) the call's token counts, once, after the last delta
StreamItem = str | TokenUsage


async def embed(embedder: Any, texts: Sequence[str], purpose: str) -> list[list[float]]:
    """The embedder's vectors, one per text; EmbeddingFailed when the provider fails, its
    reply included (no vectors, vectors that are not lists of numbers, too few of them).
    Its tokens are counted: as the provider reported them batch by batch, else estimated;
    a failed call's only where a batch answered with its count (what was billed)."""
    space = getattr(embedder, "space", None)
    started = _called(embedder.name, EMBEDDING, space.model if space is not None else "")
    tally = EmbeddingTokens()
    reset = EMBEDDING_TOKENS.set(tally)
    try:
        vectors = await embedder.embed(texts, purpose)
        if len(vectors) != len(texts):
            raise BadReply(f"{len(vectors)} vectors for {len(texts)} texts")
    except Exception as error:
        attempt = attempt_of(embedder.name, error)
        _ended(embedder.name, EMBEDDING, started, attempt, erred=True)
        _count_embedding_tokens(embedder.name, tally.tokens)
        if attempt is None:
            raise
        log.warning("embedding provider %s", attempt.describe())
        raise EmbeddingFailed(attempt) from error
    finally:
        EMBEDDING_TOKENS.reset(reset)
    _ended(
        embedder.name, EMBEDDING, started, tokens=(tally.tokens, None) if tally.batches else None
    )
    _count_embedding_tokens(embedder.name, tally.tokens if tally.batches else estimate(texts))
    return vectors


async def generate_with_fallback(
    chain: Iterable[Any], request: Generate, timeout: float
) -> ModelReply:
    """The first reply of the chain's providers, tried in order; each attempt, retries
    included, gets at most ``timeout`` seconds. A reply without any text is a failure of its
    provider like any other. Raises AllProvidersFailed or ProviderRejected."""
    answerers = able(chain, request)
    attempts: list[Attempt] = []
    failure: Exception | None = None  # the last one: the cause of a rejected request
    while isinstance(step := next_attempt(len(answerers), attempts), TryProvider):
        answerer = answerers[step.index]
        started = _called(answerer.name, request.task, answerer.model)
        try:
            with trio.fail_after(timeout):
                reply: ModelReply = await answerer.generate(request)
            if not reply.text.strip():
                raise BadReply("no text", status=None)  # a provider that did not say so itself
        except Exception as error:
            attempts.append(_failed(answerer.name, error, request.task, started))
            failure = error
        else:
            _ended(answerer.name, request.task, started, model=reply.model, tokens=reply.usage)
            _count_tokens(request, reply)
            return reply
    raise _given_up(step) from (failure if step.rejected else None)


@attrs.define
class SoFar:
    """An ``OnDelta`` that keeps what a streamed reply has produced so far, so a reply cut
    off (the client left) can be settled with what it spent (``reply``)."""

    forward: OnDelta
    pieces: list[str] = attrs.Factory(list)
    opened: OpenedStream | None = None

    async def __call__(self, delta: str) -> None:
        self.pieces.append(delta)  # produced, so billed, even if never delivered
        await self.forward(delta)

    def reply(self) -> ModelReply | None:
        """The reply so far; None when no provider had begun streaming it."""
        if self.opened is None or not self.pieces:
            return None
        opened = self.opened
        return ModelReply("".join(self.pieces), opened.provider, opened.model, opened.usage)


async def stream_with_fallback(
    chain: Iterable[Any], request: Generate, timeout: float, on_delta: OnDelta
) -> ModelReply:
    """Stream the reply to ``on_delta``; return it whole, with the token counts the provider
    reported while streaming (None when it reported none: the pipeline then estimates them).
    A ``SoFar`` is told which provider's stream it is given."""
    pieces: list[str] = []
    async with await open_stream(chain, request, timeout) as opened:
        if isinstance(on_delta, SoFar):
            on_delta.opened = opened
        async for delta in opened:
            pieces.append(delta)
            await on_delta(delta)
    reply = ModelReply(
        "".join(pieces), provider=opened.provider, model=opened.model, usage=opened.usage
    )
    _count_tokens(request, reply)
    return reply


@attrs.define
class OpenedStream:
    """A streamed reply from the first provider of the chain that produced a delta.

    ``provider`` and ``model`` say who is answering; iterate for the text deltas, and
    ``aclose()`` when stopping early (``async with`` does it). ``usage`` is the token
    counts the provider reported, set once they arrive (after the last delta); None
    while they have not, or when the provider reports none. A provider failing after the
    first delta raises AnswerBroken (a bug of ours raises as itself). ``task`` and
    ``started`` are the call's, for the metrics and its span.
    """

    provider: str
    model: str
    _first: str
    _rest: AsyncGenerator[StreamItem, None]
    usage: TokenUsage | None = None
    task: str = "answer"
    started: Call = attrs.field(factory=lambda: Call(time.perf_counter()))

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
            _ended(self.provider, self.task, self.started, attempt, erred=True)
            if attempt is None:
                raise
            log.warning("answering provider %s after its first words", attempt.describe())
            raise AnswerBroken(attempt) from error
        _ended(self.provider, self.task, self.started, model=self.model, tokens=self.usage)

    async def aclose(self) -> None:
        await self._rest.aclose()
        self.started.close()  # stopped early (the client left): its span ends now

    async def __aenter__(self) -> OpenedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def open_stream(chain: Iterable[Any], request: Generate, timeout: float) -> OpenedStream:
    """Start streaming from the chain: a provider failing before its first delta moves on to
    the next (rule 6), and so does one whose stream ends without any text; once a delta is
    out, a failure is the stream's and raises from it. Each provider gets ``timeout``
    seconds to produce its first delta."""
    answerers = able(chain, request)
    attempts: list[Attempt] = []
    failure: Exception | None = None  # the last one: the cause of a rejected request
    while isinstance(step := next_attempt(len(answerers), attempts), TryProvider):
        answerer = answerers[step.index]
        started = _called(answerer.name, request.task, answerer.model)
        deltas = _deltas(answerer, request)
        try:
            with trio.fail_after(timeout):
                first, usage = await _first_delta(deltas)
        except Exception as error:
            await deltas.aclose()
            attempts.append(_failed(answerer.name, error, request.task, started))
            failure = error
            continue
        return OpenedStream(
            answerer.name, answerer.model, first, deltas, usage, request.task, started
        )
    raise _given_up(step) from (failure if step.rejected else None)


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


def _failed(provider: str, error: Exception, task: str, started: Call) -> Attempt:
    """The failed attempt ``error`` makes, or the error itself raised when it is no provider
    failure (a bug of ours)."""
    attempt = attempt_of(provider, error)
    _ended(provider, task, started, attempt, erred=True)
    if attempt is None:
        raise error
    if moves_on(attempt.failure):
        log.warning("answering provider %s", attempt.describe())
        log.debug("%s failed", provider, exc_info=error)
    return attempt


def _given_up(step: GiveUp) -> AnswerFailed:
    """ProviderRejected when the last provider refused the request, else AllProvidersFailed."""
    return ProviderRejected(step.attempts) if step.rejected else AllProvidersFailed(step.attempts)


# ------------------------------------------- metrics (ragio.metrics), last calls (GET /status)


@attrs.define
class Call:
    """A provider call under way: when it began (``time.perf_counter``), and its span
    (``ragio.tracing``; None untraced), ended once."""

    started: float
    span: Any = None

    def close(
        self,
        failure: str | None = None,
        model: str | None = None,
        tokens: TokenUsage | tuple[int, None] | None = None,
    ) -> None:
        span, self.span = self.span, None
        if isinstance(tokens, TokenUsage):
            counts: tuple[int | None, int | None] = (tokens.prompt_tokens, tokens.completion_tokens)
        else:
            counts = tokens or (None, None)
        tracing.provider_ended(span, failure, model, *counts)


def _called(provider: str, task: str, model: str = "") -> Call:
    """Count a call as it starts, and begin its span; what ``_ended`` ends."""
    metrics.PROVIDER_CALLS.labels(provider, task).inc()
    operation = "embeddings" if task == EMBEDDING else "chat"
    return Call(time.perf_counter(), tracing.provider_span(operation, provider, model))


def _ended(
    provider: str,
    task: str,
    started: Call,
    failed: Attempt | None = None,
    *,
    erred: bool = False,
    model: str | None = None,
    tokens: TokenUsage | tuple[int, None] | None = None,
) -> None:
    """A call's time, and its failure when it failed as a provider fails (``failed``); it
    is the provider's last call unless it ``erred`` without a provider failure (a bug of
    ours, which says nothing of the provider). Its span ends with the provider's token
    counts (``tokens``: none when it reported none) or the failure's kind."""
    metrics.PROVIDER_LATENCY.labels(provider, task).observe(time.perf_counter() - started.started)
    if failed is not None:
        metrics.PROVIDER_FAILURES.labels(provider, task, failed.failure.value).inc()
    if failed is not None or not erred:
        LAST_CALLS.record(provider, task, failed)
    kind = failed.failure.value if failed is not None else "error" if erred else None
    started.close(kind, model, tokens)


def _count_tokens(request: Generate, reply: ModelReply) -> None:
    """The reply's tokens, as reported, else estimated as the usage ledger estimates them."""
    prompt = request.prompt
    usage = measured_usage(reply.usage, prompt.system + prompt.user, reply.text)
    role = request.role or metrics.NO_ROLE
    metrics.TOKENS.labels(reply.provider, role, "prompt").inc(usage.prompt_tokens)
    metrics.TOKENS.labels(reply.provider, role, "completion").inc(usage.completion_tokens)
    if (key := ASKING_KEY.get()) is not None:
        metrics.API_KEY_TOKENS.labels(key).inc(usage.total)


def _count_embedding_tokens(provider: str, tokens: int) -> None:
    """An embedding call's input tokens: no role (an embedding serves the knowledge base
    and any question), kind ``embedding``."""
    metrics.TOKENS.labels(provider, metrics.NO_ROLE, metrics.EMBEDDING_KIND).inc(tokens)
