"""Gemini through the official ``google-genai`` SDK, on an injected ``httpx.AsyncClient``.

The SDK's own async client keeps one connection pool per *asyncio* loop and so
cannot run under Trio; handed a plain ``httpx.AsyncClient`` it uses that as is,
and httpx runs natively on Trio, so every call is cancellable. The SDK's
timeout is given in ``HttpOptions`` (milliseconds): without it the SDK sends
each request with no timeout at all, whatever the injected client says.

The SDK checks a reply's shape with pydantic and raises when it is wrong (or not JSON);
a reply without any text (no candidates, a blocked prompt, a model that thought until its
allowance ran out) is a BadReply here. Both move on to the next provider.

Retries are ours, not the SDK's: its backoff ignores the wait the server asks
for, which Gemini states in a ``google.rpc.RetryInfo`` detail (``"retryDelay":
"37s"``) and proxies in a ``Retry-After`` header. 429, 408 and 5xx are retried;
a timeout is not, so a hanging server costs one PROVIDER_TIMEOUT_SECONDS.
"""

from __future__ import annotations

import email.utils
import itertools
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from datetime import datetime
from typing import Any, ClassVar, TypeVar, cast
from urllib.parse import urlsplit

import httpx
import trio
from google import genai
from google.genai import errors, types

from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.retry import retry_after_seconds
from ragcore.settings import Settings
from ragcore.usage import TokenUsage
from ragio.providers.batching import check_dimensions, check_vectors, embed_in_batches
from ragio.providers.failures import BadReply, no_text
from ragio.providers.wire import checking_replies

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_BATCH = 100  # texts per batchEmbedContents request, the API's limit
MAX_RETRIES = 2  # for answers: rides out a brief rate limit without stalling a reply
EMBED_MAX_RETRIES = 4  # for embeddings: ingestion can afford to wait a little longer
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
FIRST_BACKOFF = 0.5  # seconds; doubled on each retry, with jitter, when the server names no wait
MAX_BACKOFF = 8.0
MAX_ASKED_WAIT = 60.0  # a server asking for a longer wait is not waited for: the error is raised

TASK_TYPES = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}


def make_client(
    settings: Settings, http: httpx.AsyncClient, base_url: str | None = None
) -> genai.Client:
    """A client on ``http``; ``base_url`` None: the Gemini API (or GOOGLE_GEMINI_BASE_URL)."""
    options = types.HttpOptions(
        base_url=base_url,
        timeout=int(settings.provider_timeout_seconds * 1000),
        httpx_async_client=http,
    )
    return genai.Client(api_key=settings.genai_api_key, http_options=options)


def make_http_client(settings: Settings) -> httpx.AsyncClient:
    return checking_replies(
        httpx.AsyncClient(timeout=settings.provider_timeout_seconds),
        settings.max_provider_reply_bytes,
    )


class _GenaiProvider:
    #: retries of a call on 429 and 5xx when the constructor is given no other number
    default_retries: ClassVar[int]

    def __init__(
        self,
        settings: Settings,
        *,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_retries: int | None = None,
    ) -> None:
        self.http = http_client or make_http_client(settings)
        self.client = make_client(settings, self.http, base_url)
        self.max_retries = self.default_retries if max_retries is None else max_retries
        self.configure(settings)
        # host[:port] only, for error messages
        self.where = urlsplit(base_url or "").netloc.rpartition("@")[2] or "the Gemini API"

    def configure(self, settings: Settings) -> None:
        """What the answerer or the embedder takes from ``settings`` besides the client."""

    async def aclose(self) -> None:
        """Close the pooled connections; call it when the service shuts down."""
        self.client.close()  # the SDK's sync client, never used, holds no connection
        await self.http.aclose()

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        for attempt in itertools.count():
            try:
                return await call()
            except errors.APIError as error:
                wait = retry_wait(error, attempt) if attempt < self.max_retries else None
                if wait is None or trio.current_time() + wait >= trio.current_effective_deadline():
                    raise  # a wait the caller's deadline would cut short: say why, now
                log.info("%s answered %s; retrying in %.2f s", self.where, error.code, wait)
                await trio.sleep(wait)
        raise AssertionError("unreachable")


class GenaiAnswerer(_GenaiProvider):
    name = "genai"
    default_retries = MAX_RETRIES

    def configure(self, settings: Settings) -> None:
        self.model = settings.genai_chat_model

    async def generate(self, request: Generate) -> ModelReply:
        """The whole reply; ``ModelReply.model`` is the model version the server says answered."""
        response = await self._retrying(
            lambda: self.client.aio.models.generate_content(
                model=self.model, contents=request.prompt.user, config=_config(request)
            )
        )
        text = _text(response)
        if not text.strip():
            raise _without_text(response)
        return ModelReply(
            text,
            provider=self.name,
            model=response.model_version or self.model,
            usage=_usage(response.usage_metadata),
        )

    async def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]:
        """The reply's text as the server produces it (streamGenerateContent with alt=sse), one
        non-empty delta at a time; then its token counts, from the last chunk's
        ``usageMetadata`` (each chunk carries the counts so far), thinking counted as output.
        Opening the stream is retried like ``generate`` until the first event arrives, never
        after. Stop early with ``aclose()``: that closes the response.
        """

        async def open_stream() -> tuple[AsyncIterator[types.GenerateContentResponse], Any]:
            chunks = await self.client.aio.models.generate_content_stream(
                model=self.model, contents=request.prompt.user, config=_config(request)
            )
            try:
                return chunks, await anext(chunks)
            except StopAsyncIteration:
                return chunks, None
            except BaseException:
                await chunks.aclose()  # type: ignore[attr-defined]
                raise

        chunks, first = await self._retrying(open_stream)
        async with aclosing(chunks):  # type: ignore[type-var]
            if first is None:
                raise BadReply("an empty stream")
            wrote, last = False, first
            if text := _text(first):
                wrote = bool(text.strip())
                yield text
            usage = _usage(first.usage_metadata)
            async for chunk in chunks:
                if text := _text(chunk):
                    wrote = wrote or bool(text.strip())
                    yield text
                usage = _usage(chunk.usage_metadata) or usage
                last = chunk
            if not wrote:
                raise _without_text(last, "events")
        if usage is not None:
            yield usage


class GenaiEmbedder(_GenaiProvider):
    name = "genai"
    default_retries = EMBED_MAX_RETRIES

    def configure(self, settings: Settings) -> None:
        self.space = EmbeddingSpace(
            self.name, settings.genai_embedding_model, settings.embedding_dimensions
        )

    async def embed(self, texts: Sequence[str], purpose: str) -> list[list[float]]:
        """One vector per text, in order: batchEmbedContents requests of at most MAX_BATCH
        texts, a few in flight at once, each retried on 429 and 5xx."""
        config = types.EmbedContentConfig(
            task_type=TASK_TYPES.get(purpose, TASK_TYPES["document"]),
            output_dimensionality=self.space.dimensions,
        )

        async def send(batch: list[str]) -> list[list[float]]:
            response = await self._retrying(
                lambda: self.client.aio.models.embed_content(
                    # a list of texts; typed as the SDK's union of parts (list is invariant)
                    model=self.space.model,
                    contents=cast("list[types.PartUnion]", batch),
                    config=config,
                )
            )
            embeddings = response.embeddings
            vectors = check_vectors(
                [item.values for item in embeddings] if embeddings else embeddings,
                len(batch),
                "embeddings",
            )
            check_dimensions(vectors, self.space, self.where, "outputDimensionality")
            return vectors

        return await embed_in_batches(texts, MAX_BATCH, send)


# ---------------------------------------------------------------- helpers


def _config(request: Generate) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        system_instruction=request.prompt.system,
        max_output_tokens=request.max_output_tokens,
        temperature=request.temperature,
    )


def _text(response: types.GenerateContentResponse) -> str:
    """The answer's text: the first candidate's text parts, without any "thought" parts.

    Empty when the prompt was blocked (no candidates) or a chunk carries only usage.
    """
    if not response.candidates:
        return ""
    content = response.candidates[0].content
    parts = (content.parts if content else None) or ()
    return "".join(part.text for part in parts if part.text and not part.thought)


def _without_text(response: types.GenerateContentResponse, shape: str = "JSON") -> BadReply:
    """What a reply without text says about itself: a blocked prompt (no candidates, and
    ``promptFeedback.blockReason``), no candidates, or a candidate that finished without
    writing (MAX_TOKENS: a thinking model spent its whole allowance thinking). ``shape``:
    ``JSON``, or ``events`` for the last event of a stream."""
    if response.candidates is None:
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            return no_text(feedback.block_reason, "prompt blocked:")
        return BadReply(f"{shape} without candidates")
    if not response.candidates:
        return BadReply("an empty candidates list")
    return no_text(response.candidates[0].finish_reason)


def _usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> TokenUsage | None:
    """Prompt and output tokens; thinking tokens are billed as output, so they count as such."""
    if metadata is None or metadata.prompt_token_count is None:
        return None
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return TokenUsage(metadata.prompt_token_count, output)


def retry_wait(error: errors.APIError, retry: int) -> float | None:
    """Seconds to wait before retry number ``retry`` (0-based) after ``error``; None: don't.

    The server's own wait (Retry-After, or Gemini's RetryInfo) wins when it names one,
    unless it is longer than MAX_ASKED_WAIT; otherwise exponential backoff with jitter.
    """
    if error.code not in RETRIED_STATUSES:
        return None
    asked = asked_wait(error)
    if asked is not None:
        return asked if asked <= MAX_ASKED_WAIT else None
    backoff = min(FIRST_BACKOFF * 2**retry, MAX_BACKOFF)
    return backoff * (0.5 + random.random() / 2)


def _served_at(date: str | None) -> datetime | None:
    try:
        return email.utils.parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError, IndexError):
        return None


def asked_wait(error: errors.APIError) -> float | None:
    """The wait the server asked for: ``Retry-After`` (seconds or a date), or the
    ``retryDelay`` of a ``google.rpc.RetryInfo`` detail in the error body."""
    headers = getattr(error.response, "headers", None) or {}
    header = headers.get("retry-after")
    if header:
        # a date is counted from the response's own Date: the server's clock, not ours
        seconds = retry_after_seconds(header, _served_at(headers.get("date")))
        if seconds is not None:
            return seconds
    body = error.details if isinstance(error.details, dict) else {}
    inner = body.get("error", body)
    for detail in inner.get("details") or () if isinstance(inner, dict) else ():
        if isinstance(detail, dict) and detail.get("@type", "").endswith("google.rpc.RetryInfo"):
            return _duration(detail.get("retryDelay"))
    return None


def _duration(value: Any) -> float | None:
    """A protobuf Duration in JSON ("37s", "0.5s"), in seconds."""
    if isinstance(value, str) and value.endswith("s"):
        try:
            return max(0.0, float(value[:-1]))
        except ValueError:
            return None
    return None
