"""Run a ragcore pipeline: execute each effect it yields and send the result back."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import attrs
import trio

from ragcore.chat.fallback import Attempt, FailureKind, classify_status, failure_summary, moves_on
from ragcore.effects import (
    DetectLanguage,
    Embed,
    FindDocument,
    Generate,
    ReleaseTokens,
    Reply,
    ReserveTokens,
    SearchChunks,
    SettleTokens,
    StoreDocument,
)
from ragio.knowledge import search, store
from ragio.usage import ledger

T = TypeVar("T")
log = logging.getLogger(__name__)


async def run(pipeline: Generator[Any, Any, T], service: Any) -> T:
    """Drive ``pipeline`` to its return value, executing its effects against ``service``."""
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect = pipeline.throw(failure) if failure else pipeline.send(result)
        except StopIteration as done:
            return done.value
        failure = None
        try:
            result = await execute(effect, service)
        except Exception as error:  # the pipeline may handle it; if not, it re-raises
            failure = error


async def execute(effect: Any, service: Any) -> Any:
    match effect:
        case Embed(texts=texts, purpose=purpose):
            return await service.embedder.embed(texts, purpose)
        case SearchChunks(vector=vector, limit=limit):
            dims = service.embedder.space.dimensions
            return await service.database.run(search.search_chunks, vector, limit, dims)
        case Generate():
            # rule 6: the primary, then LLM_FALLBACK_PROVIDERS; see "Answering with fallback"
            timeout = service.settings.provider_timeout_seconds
            return await generate_with_fallback(service.answerer, effect, timeout)
        case FindDocument(content_hash=digest):
            return await service.database.run(store.find_document, digest)
        case StoreDocument():
            return await service.database.run(store.store_document, effect)
        case DetectLanguage(text=text):
            return await service.language.detect(text)
        case ReserveTokens(role=role, tokens=tokens, caps=caps):
            now = datetime.now(UTC)
            return await service.database.run(ledger.reserve, role, tokens, caps, now)
        case SettleTokens(reservation_id=rid, provider=provider, model=model, usage=usage):
            return await service.database.run(ledger.settle, rid, provider, model, usage)
        case ReleaseTokens(reservation_id=rid):
            return await service.database.run(ledger.release, rid)
    raise TypeError(f"no handler for effect {effect!r}")


# ---------------------------------------------------------------- answering with fallback
#
# The rules (the order, which failures move on) are ragcore.chat.fallback's; here each
# SDK's exceptions are mapped into its FailureKind and the chain is tried in order.


class AnswerFailed(RuntimeError):
    """No answer from the chain; ``attempts`` says which providers failed and how (no secrets).

    ``status`` is the HTTP status the API answers with.
    """

    status = 502
    title = "The answering provider could not be used"

    def __init__(self, attempts: Sequence[Attempt]):
        self.attempts = tuple(attempts)
        super().__init__(failure_summary(self.attempts))


class AllProvidersFailed(AnswerFailed):
    """Every provider in the chain failed in a way that moves on (rule 6): try again later."""

    status = 503
    title = "No answering provider could answer"


class ProviderRejected(AnswerFailed):
    """A provider refused the request itself (400, 404…): the next one would too, so none is
    tried after it. A configuration problem (model name, MAX_OUTPUT_TOKENS) more often than not."""


async def generate_with_fallback(chain: Iterable[Any], request: Generate, timeout: float) -> Reply:
    """The first reply of the chain's providers, tried in order; each attempt, retries
    included, gets at most ``timeout`` seconds. Raises AllProvidersFailed or ProviderRejected."""
    attempts: list[Attempt] = []
    for answerer in chain:
        try:
            with trio.fail_after(timeout):
                return await answerer.generate(request)
        except Exception as error:
            _record(attempts, answerer.name, error)
    raise AllProvidersFailed(attempts)


@attrs.define
class OpenedStream:
    """A streamed reply from the first provider of the chain that produced a delta.

    ``provider`` and ``model`` say who is answering; iterate for the text deltas, and
    ``aclose()`` when stopping early (``async with`` does it).
    """

    provider: str
    model: str
    _first: str
    _rest: AsyncIterator[str]

    async def __aiter__(self) -> AsyncIterator[str]:
        if self._first:  # "" when the provider streamed no text at all
            yield self._first
        async for delta in self._rest:
            yield delta

    async def aclose(self) -> None:
        await self._rest.aclose()  # type: ignore[attr-defined]

    async def __aenter__(self) -> OpenedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def open_stream(chain: Iterable[Any], request: Generate, timeout: float) -> OpenedStream:
    """Start streaming from the chain: a provider failing before its first delta moves on to
    the next (rule 6); once a delta is out, a failure is the stream's and raises from it.
    Each provider gets ``timeout`` seconds to produce its first delta."""
    attempts: list[Attempt] = []
    for answerer in chain:
        deltas = _deltas(answerer, request)
        try:
            with trio.fail_after(timeout):
                first = await anext(deltas, "")
        except Exception as error:
            await deltas.aclose()
            _record(attempts, answerer.name, error)
            continue
        return OpenedStream(answerer.name, answerer.model, first, deltas)
    raise AllProvidersFailed(attempts)


def _deltas(answerer: Any, request: Generate) -> AsyncGenerator[str, None]:
    if hasattr(answerer, "stream"):
        return answerer.stream(request)

    async def whole() -> AsyncGenerator[str, None]:  # an answerer that cannot stream
        yield (await answerer.generate(request)).text

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


def classify_failure(error: BaseException) -> tuple[FailureKind, int | None] | None:
    """The failure kind (and HTTP status) of an answering provider's exception; None when
    it is not a provider failure at all. An SDK that was never imported raised nothing, so
    each is looked up in ``sys.modules`` rather than imported here."""
    if isinstance(error, trio.TooSlowError):
        return FailureKind.TIMEOUT, None
    for sdk in ("openai", "anthropic"):  # the same Stainless-generated error classes
        module = sys.modules.get(sdk)
        if module is None:
            continue
        if isinstance(error, module.APITimeoutError):
            return FailureKind.TIMEOUT, None
        if isinstance(error, module.APIConnectionError):
            return FailureKind.UNAVAILABLE, None
        if isinstance(error, module.APIStatusError):
            kind = _anthropic_error_type(error) if sdk == "anthropic" else None
            return kind or classify_status(error.status_code), error.status_code
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(error, genai_errors.APIError):
        # A wrong key is a 400 with reason API_KEY_INVALID; a 400 FAILED_PRECONDITION says the
        # account cannot be used from here ("User location is not supported", no billing).
        if _gemini_key_invalid(error.details) or error.status == "FAILED_PRECONDITION":
            return FailureKind.BAD_KEY, error.code
        return classify_status(error.code), error.code
    httpx = sys.modules.get("httpx")  # the client the genai SDK runs on
    if httpx is not None:
        if isinstance(error, httpx.TimeoutException):
            return FailureKind.TIMEOUT, None
        if isinstance(error, httpx.TransportError):
            return FailureKind.UNAVAILABLE, None
    return None


_ANTHROPIC_ERROR_TYPES = {
    "rate_limit_error": FailureKind.RATE_LIMITED,
    "overloaded_error": FailureKind.UNAVAILABLE,
    "api_error": FailureKind.UNAVAILABLE,
    "timeout_error": FailureKind.TIMEOUT,
    "authentication_error": FailureKind.BAD_KEY,
    "permission_error": FailureKind.BAD_KEY,
    "billing_error": FailureKind.BAD_KEY,
}


def _anthropic_error_type(error: Any) -> FailureKind | None:
    """By the body's error type: an ``error`` event mid-stream arrives on a 200 response.
    An account out of credit is a 400 invalid_request_error that another provider avoids."""
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    if "credit balance is too low" in str(inner.get("message", "")):
        return FailureKind.BAD_KEY
    return _ANTHROPIC_ERROR_TYPES.get(str(inner.get("type")))


def _gemini_key_invalid(details: Any) -> bool:
    """Gemini answers a wrong key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID."""
    body = details.get("error", details) if isinstance(details, dict) else {}
    reasons = (
        detail.get("reason") for detail in body.get("details") or () if isinstance(detail, dict)
    )
    return "API_KEY_INVALID" in reasons
