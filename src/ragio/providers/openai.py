"""OpenAI and OpenAI-compatible servers (Ollama, vLLM, llama.cpp, OpenRouter…).

The official SDK's ``AsyncOpenAI`` holds the settings (key, base URL, retries) and the
checked HTTP client (ragio.providers.wire); the requests themselves are posted by
ragio.providers.openai_http as the SDK posts them (the same body, headers, retries,
errors), without its per-call machinery, and their replies read here from the JSON. It
all runs natively under Trio, so every call is cancellable. 429 and 5xx are retried,
honouring the server's Retry-After; each request carries PROVIDER_TIMEOUT_SECONDS,
whatever timeout an injected client has.

Token counts of a streamed reply: ``stream_options={"include_usage": true}`` asks
for one last chunk (``choices`` empty) carrying ``usage``. OpenAI, vLLM and Ollama
(since 0.5.2) honour it; llama.cpp's server and OpenRouter send the usage chunk
anyway and accept the option; older Ollama and vLLM servers ignore it (no counts:
the ledger estimates them). Some compatible APIs refuse it: Azure OpenAI on older
API versions (400 "Unrecognized request argument supplied: stream_options"), Groq
in 2024 (400 "property 'stream_options' is unsupported"), Mistral (422 naming it
in ``loc``). A refusal that names the option is asked again without it, and the
option is not sent again by this answerer. Whatever chunk carries ``usage`` (some
servers put it on every chunk, as running totals), the last one wins.

Reading a reply: what a server sends is checked here, not trusted: a body that is not
JSON, a reply without ``choices``, of the wrong types or without any text is a BadReply,
which moves on to the next provider. A stream may carry chunks of a server's own (without
``choices``) among the real ones; only a stream without any text fails.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from openai import (
    AsyncOpenAI,
    BadRequestError,
    DefaultAsyncHttpxClient,
    UnprocessableEntityError,
)

from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.settings import Settings
from ragcore.usage import TokenUsage, is_count, reported_usage
from ragio.providers.batching import (
    check_dimensions,
    check_vectors,
    embed_in_batches,
    report_tokens,
)
from ragio.providers.failures import BadReply, no_text, stream_without_text
from ragio.providers.openai_http import EventStream, OpenAIHttp, drain, read_json
from ragio.providers.wire import checking_replies

# Inputs per embeddings request: the API takes 2,048, but also at most 300,000 tokens a
# request, which 2,048 chunks of ~224 tokens would pass.
MAX_BATCH = 512
MAX_RETRIES = 2  # the SDK's default: rides out a brief rate limit without stalling a reply
CHAT = "chat/completions"
EMBEDDINGS = "embeddings"


def make_client(settings: Settings, max_retries: int = MAX_RETRIES) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key=settings.openai_api_key or "unset",
        base_url=settings.openai_base_url or None,
        timeout=settings.provider_timeout_seconds,
        max_retries=max_retries,
        http_client=checking_replies(
            DefaultAsyncHttpxClient(timeout=settings.provider_timeout_seconds),
            settings.max_provider_reply_bytes,
        ),
    )


def _messages(request: Generate) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": request.prompt.system},
        {"role": "user", "content": request.prompt.user},
    ]


class OpenAIAnswerer:
    name = "openai"

    def __init__(
        self,
        settings: Settings,
        client: AsyncOpenAI | None = None,
        *,
        max_retries: int = MAX_RETRIES,
    ):
        self.client = client or make_client(settings, max_retries)
        self.api = OpenAIHttp(self.client, settings.provider_timeout_seconds)
        self.model = settings.openai_chat_model
        self.asks_stream_usage = True  # until the server refuses stream_options

    async def aclose(self) -> None:
        """Close the client's pooled connections; call it when the service shuts down."""
        await self.api.close()

    async def generate(self, request: Generate) -> ModelReply:
        """The whole reply; ``ModelReply.model`` is the model the server says answered (often a
        dated snapshot of the configured name), so logs show what really ran."""
        response = await self.api.post(
            CHAT,
            {
                "model": self.model,
                "messages": _messages(request),
                "max_tokens": request.max_output_tokens,
                "temperature": request.temperature,
            },
        )
        completion = read_json(response)
        return ModelReply(
            _completion_text(completion),
            provider=self.name,
            model=_model(completion, self.model),
            usage=_token_usage(completion.get("usage")),  # some compatible servers report none
        )

    async def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]:
        """The reply's text as the server produces it, one non-empty delta at a time, then
        the token counts when the server reported them (see the module's notes).

        So a client sees the first words long before the last are written. The
        timeout applies to connecting and to each wait for the next event, not to
        the whole reply. Stop early with ``aclose()`` (or ``contextlib.aclosing``):
        that closes the HTTP response and frees the connection.
        """
        response = await self._open_stream(request)
        usage, wrote, finished = None, False, None
        chunks = without_choices = 0
        events = EventStream(response)
        pieces = response.aiter_bytes()
        try:
            with self.api.reading(response):
                async for piece in pieces:
                    for chunk in events.feed(piece):
                        chunks += 1
                        choices = _field(chunk, "choices")
                        if not isinstance(choices, list):
                            without_choices += 1
                            continue
                        for choice in choices:  # empty in a trailing usage chunk
                            content = _field(_field(choice, "delta"), "content")
                            if content is not None and not isinstance(content, str):
                                raise BadReply("events whose text is not a string")
                            if content:
                                wrote = wrote or bool(content.strip())
                                yield content
                            finished = _field(choice, "finish_reason") or finished
                        usage = _token_usage(_field(chunk, "usage")) or usage
                    if events.done:
                        await drain(response)
                        break
            if not wrote:
                content_type = response.headers.get("content-type")
                missing = "choices" if chunks and without_choices == chunks else None
                raise stream_without_text(content_type, chunks, missing, finished)
        finally:
            await response.aclose()
            await pieces.aclose()  # after the response: its iterators are done with
        if usage is not None:
            yield usage

    async def _open_stream(self, request: Generate) -> Any:
        body: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "messages": _messages(request),
            "max_tokens": request.max_output_tokens,
            "temperature": request.temperature,
        }
        if self.asks_stream_usage:
            try:
                options = {"stream_options": {"include_usage": True}}
                return await self.api.post(CHAT, {**body, **options}, stream=True)
            except (BadRequestError, UnprocessableEntityError) as error:
                if not _refuses_stream_options(error):
                    raise
                self.asks_stream_usage = False
        return await self.api.post(CHAT, body, stream=True)


def _field(value: Any, name: str) -> Any:
    """``value[name]`` of a JSON object; None when absent, or when ``value`` is no object."""
    return value.get(name) if isinstance(value, dict) else None


def _completion_text(completion: Any) -> str:
    """The first choice's text, or BadReply saying what is wrong with the completion."""
    if isinstance(completion, str):  # as the SDK read a JSON string: no completion at all
        raise BadReply("a body that is not JSON")
    if not isinstance(completion, dict):
        raise BadReply("JSON that is not a chat completion")
    choices = completion.get("choices")
    if not isinstance(choices, list):
        raise BadReply("JSON without choices")
    if not choices:
        raise BadReply("an empty choices list")
    content = _field(_field(choices[0], "message"), "content")
    if content is not None and not isinstance(content, str):
        raise BadReply("a message content that is not a string")
    if not content or not content.strip():
        raise no_text(_field(choices[0], "finish_reason"))
    return content


def _model(completion: dict[str, Any], configured: str) -> str:
    model = completion.get("model")
    return model if isinstance(model, str) and model else configured


def _token_usage(usage: Any) -> TokenUsage | None:
    """The counts the server reported; None when it reported none, or none that are counts."""
    return reported_usage(_field(usage, "prompt_tokens"), _field(usage, "completion_tokens"))


def _refuses_stream_options(error: BadRequestError | UnprocessableEntityError) -> bool:
    """A 400 or 422 that names ``stream_options`` (or ``include_usage``): its message or
    body, in whatever shape the server gives its errors."""
    said = f"{error.message} {error.body}"
    return "stream_options" in said or "include_usage" in said


class OpenAIEmbedder:
    name = "openai"

    def __init__(
        self,
        settings: Settings,
        client: AsyncOpenAI | None = None,
        *,
        max_retries: int = MAX_RETRIES,
    ):
        self.client = client or make_client(settings, max_retries)
        self.api = OpenAIHttp(self.client, settings.provider_timeout_seconds)
        self.space = EmbeddingSpace(
            self.name, settings.openai_embedding_model, settings.embedding_dimensions
        )
        # host[:port] only: a base URL may carry credentials, and this goes into error messages
        self.where = (
            urlsplit(settings.openai_base_url).netloc.rpartition("@")[2] or "api.openai.com"
        )

    async def aclose(self) -> None:
        """Close the client's pooled connections; call it when the service shuts down."""
        await self.api.close()

    async def embed(self, texts: Sequence[str], purpose: str) -> list[list[float]]:
        """One vector per text, in order; requests of at most MAX_BATCH inputs, a few at once.

        Asks for base64 vectors, as the SDK does, and decodes them with numpy: several
        times faster than parsing JSON floats (measured with scripts/bench_ingest.py);
        takes plain floats from servers that ignore ``encoding_format``.
        """
        return await embed_in_batches(texts, MAX_BATCH, self._embed_batch)

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        response = await self.api.post(
            EMBEDDINGS,
            {
                "model": self.space.model,
                "input": batch,
                "dimensions": self.space.dimensions,
                "encoding_format": "base64",
            },
        )
        reply = read_json(response)
        data = _field(reply, "data")
        if not data:
            raise BadReply("JSON without embedding data")
        items = sorted(data, key=_index) if isinstance(data, list) else data
        vectors = check_vectors(
            [_vector(item) for item in items] if isinstance(items, list) else items,
            len(batch),
            "data",
        )
        check_dimensions(vectors, self.space, self.where, "dimensions")
        usage = _field(reply, "usage")
        report_tokens(batch, _field(usage, "prompt_tokens"))  # some servers send none
        return vectors


def _vector(item: Any) -> Any:
    """An item's ``embedding``: base64 of little-endian float32s decoded, as the SDK decodes
    them; anything else as it is (floats from a server that ignores ``encoding_format``)."""
    embedding = _field(item, "embedding")
    if not isinstance(embedding, str):
        return embedding
    try:
        return np.frombuffer(base64.b64decode(embedding), dtype="float32").tolist()
    except (binascii.Error, ValueError):
        raise BadReply("vectors it cannot decode") from None


def _index(item: Any) -> int:
    """Where an embedding goes: its ``index``, which every server sends; in order without."""
    index: Any = _field(item, "index")
    return index if is_count(index) else 0
