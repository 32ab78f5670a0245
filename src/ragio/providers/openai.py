"""OpenAI and OpenAI-compatible servers (Ollama, vLLM, llama.cpp, OpenRouter…).

Through the official SDK's ``AsyncOpenAI``, which runs natively under Trio, so
every call is cancellable. The SDK retries 429 and 5xx itself, honouring the
server's Retry-After; each request carries PROVIDER_TIMEOUT_SECONDS, passed on
the call as well as the client so an injected client cannot drop it.

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

Reading a reply: the SDK builds its objects from the JSON without checking their shape
(and hands back the body as a string when it is not JSON at all), so what is read is
checked here: a reply without ``choices``, of the wrong types or without any text is a
BadReply, which moves on to the next provider. A stream may carry chunks of a server's own
(without ``choices``) among the real ones; only a stream without any text fails.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from openai import (
    AsyncOpenAI,
    AsyncStream,
    BadRequestError,
    DefaultAsyncHttpxClient,
    UnprocessableEntityError,
)
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam

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
from ragio.providers.wire import checking_replies

# Inputs per embeddings request: the API takes 2,048, but also at most 300,000 tokens a
# request, which 2,048 chunks of ~224 tokens would pass.
MAX_BATCH = 512
MAX_RETRIES = 2  # the SDK's default: rides out a brief rate limit without stalling a reply


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


def _messages(request: Generate) -> list[ChatCompletionMessageParam]:
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
        self.model = settings.openai_chat_model
        self.timeout = settings.provider_timeout_seconds
        self.asks_stream_usage = True  # until the server refuses stream_options

    async def aclose(self) -> None:
        """Close the client's pooled connections; call it when the service shuts down."""
        await self.client.close()

    async def generate(self, request: Generate) -> ModelReply:
        """The whole reply; ``ModelReply.model`` is the model the server says answered (often a
        dated snapshot of the configured name), so logs show what really ran."""
        completion = await self._create(
            {
                "model": self.model,
                "messages": _messages(request),
                "max_tokens": request.max_output_tokens,
                "temperature": request.temperature,
            }
        )
        return ModelReply(
            _completion_text(completion),
            provider=self.name,
            model=_model(completion, self.model),
            usage=_token_usage(completion.usage),  # some compatible servers report none
        )

    async def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]:
        """The reply's text as the server produces it, one non-empty delta at a time, then
        the token counts when the server reported them (see the module's notes).

        So a client sees the first words long before the last are written. The
        timeout applies to connecting and to each wait for the next event, not to
        the whole reply. Stop early with ``aclose()`` (or ``contextlib.aclosing``):
        that closes the HTTP response and frees the connection.
        """
        events = await self._open_stream(request)
        usage, wrote, finished = None, False, None
        chunks = without_choices = 0
        async with events:
            async for chunk in events:
                chunks += 1
                choices = getattr(chunk, "choices", None)
                if not isinstance(choices, list):
                    without_choices += 1
                    continue
                for choice in choices:  # empty in a trailing usage chunk
                    content = getattr(getattr(choice, "delta", None), "content", None)
                    if content is not None and not isinstance(content, str):
                        raise BadReply("events whose text is not a string")
                    if content:
                        wrote = wrote or bool(content.strip())
                        yield content
                    finished = getattr(choice, "finish_reason", None) or finished
                usage = _token_usage(getattr(chunk, "usage", None)) or usage
            if not wrote:
                content_type = events.response.headers.get("content-type")
                missing = "choices" if chunks and without_choices == chunks else None
                raise stream_without_text(content_type, chunks, missing, finished)
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
                return await self._create({**body, "stream_options": {"include_usage": True}})
            except (BadRequestError, UnprocessableEntityError) as error:
                if not _refuses_stream_options(error):
                    raise
                self.asks_stream_usage = False
        return await self._create(body)

    async def _create(self, body: dict[str, Any]) -> Any:
        """POST /chat/completions as ``client.chat.completions.create`` sends it (the same
        body, headers, key, retries, timeout and parsed reply), without the SDK's transform
        of its arguments against their TypedDicts: for these plain JSON values it only
        drops the omitted ones, and it cost ~1 ms of CPU a call, more than the rest of
        the call on a local server."""
        stream = bool(body.get("stream"))
        return await self.client.post(
            "/chat/completions",
            body=body,
            options={"timeout": self.timeout, "security": {"bearer_auth": True}},
            cast_to=ChatCompletion,
            stream=stream,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )


def _completion_text(completion: Any) -> str:
    """The first choice's text, or BadReply saying what is wrong with the completion."""
    if isinstance(completion, str):  # the SDK's answer to a body that is not JSON
        raise BadReply("a body that is not JSON")
    if not isinstance(completion, ChatCompletion):
        raise BadReply("JSON that is not a chat completion")
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list):
        raise BadReply("JSON without choices")
    if not choices:
        raise BadReply("an empty choices list")
    content = getattr(getattr(choices[0], "message", None), "content", None)
    if content is not None and not isinstance(content, str):
        raise BadReply("a message content that is not a string")
    if not content or not content.strip():
        raise no_text(getattr(choices[0], "finish_reason", None))
    return content


def _model(completion: Any, configured: str) -> str:
    model = getattr(completion, "model", None)
    return model if isinstance(model, str) and model else configured


def _token_usage(usage: Any) -> TokenUsage | None:
    """The counts the server reported; None when it reported none, or none that are counts."""
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    return reported_usage(prompt, completion)


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
        self.space = EmbeddingSpace(
            self.name, settings.openai_embedding_model, settings.embedding_dimensions
        )
        self.timeout = settings.provider_timeout_seconds
        # host[:port] only: a base URL may carry credentials, and this goes into error messages
        self.where = (
            urlsplit(settings.openai_base_url).netloc.rpartition("@")[2] or "api.openai.com"
        )

    async def aclose(self) -> None:
        """Close the client's pooled connections; call it when the service shuts down."""
        await self.client.close()

    async def embed(self, texts: Sequence[str], purpose: str) -> list[list[float]]:
        """One vector per text, in order; requests of at most MAX_BATCH inputs, a few at once.

        Leaves ``encoding_format`` to the SDK: it asks for base64 and decodes it with
        numpy, several times faster than parsing JSON floats (measured with
        scripts/bench_ingest.py), and takes plain floats from servers that ignore it.
        """
        return await embed_in_batches(texts, MAX_BATCH, self._embed_batch)

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        raw = await self.client.embeddings.with_raw_response.create(
            model=self.space.model,
            input=batch,
            dimensions=self.space.dimensions,
            timeout=self.timeout,
        )
        if not raw.headers.get("content-type", "").split(";")[0].strip().endswith("json"):
            _check_json(raw.content)  # not JSON: the SDK would hand the body back as text
        try:
            response = raw.parse()  # decodes the base64 vectors (see ``embed``)
        except json.JSONDecodeError:
            raise  # a failure of the reply, classified as such
        except ValueError as error:  # the SDK's checks while decoding the vectors
            missing = "No embedding data" in str(error)
            reason = "JSON without embedding data" if missing else "vectors it cannot decode"
            raise BadReply(reason) from error
        data = getattr(response, "data", None)
        items = sorted(data, key=_index) if isinstance(data, list) else data
        vectors = check_vectors(
            [getattr(item, "embedding", None) for item in items] if items else items,
            len(batch),
            "data",
        )
        check_dimensions(vectors, self.space, self.where, "dimensions")
        usage = getattr(response, "usage", None)
        report_tokens(batch, getattr(usage, "prompt_tokens", None))  # some servers send none
        return vectors


def _check_json(body: bytes) -> None:
    """BadReply unless ``body`` is JSON: some compatible servers send JSON under another
    content type, which the SDK reads as JSON all the same."""
    try:
        json.loads(body)
    except ValueError:  # JSONDecodeError, or bytes that are not text
        raise BadReply("a body that is not JSON") from None


def _index(item: Any) -> int:
    """Where an embedding goes: its ``index``, which every server sends; in order without."""
    index: Any = getattr(item, "index", None)
    return index if is_count(index) else 0
