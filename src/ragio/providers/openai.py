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
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from openai import AsyncOpenAI, BadRequestError, UnprocessableEntityError
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionMessageParam

from ragcore.effects import Generate, Reply
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.usage import TokenUsage
from ragio.providers.batching import check_dimensions, embed_in_batches

# Inputs per embeddings request: the API takes 2,048, but also at most 300,000 tokens a
# request, which 2,048 chunks of ~224 tokens would pass.
MAX_BATCH = 512
MAX_RETRIES = 2  # the SDK's default: rides out a brief rate limit without stalling a reply



def make_client(settings: Any, max_retries: int = MAX_RETRIES) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key=settings.openai_api_key or "unset",
        base_url=settings.openai_base_url or None,
        timeout=settings.provider_timeout_seconds,
        max_retries=max_retries,
    )


def _messages(request: Generate) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": request.prompt.system},
        {"role": "user", "content": request.prompt.user},
    ]


class OpenAIAnswerer:
    name = "openai"

    def __init__(
        self, settings: Any, client: AsyncOpenAI | None = None, *, max_retries: int = MAX_RETRIES
    ):
        self.client = client or make_client(settings, max_retries)
        self.model = settings.openai_chat_model
        self.timeout = settings.provider_timeout_seconds
        self.asks_stream_usage = True  # until the server refuses stream_options

    async def aclose(self) -> None:
        """Close the client's pooled connections; call it when the service shuts down."""
        await self.client.close()

    async def generate(self, request: Generate) -> Reply:
        """The whole reply; ``Reply.model`` is the model the server says answered (often a
        dated snapshot of the configured name), so logs show what really ran."""
        completion = await self.client.chat.completions.create(
            model=self.model,
            messages=_messages(request),
            max_tokens=request.max_output_tokens,
            temperature=request.temperature,
            timeout=self.timeout,
        )
        text = completion.choices[0].message.content or ""
        return Reply(
            text,
            provider=self.name,
            model=completion.model or self.model,
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
        usage = None
        async with events:
            async for chunk in events:
                for choice in chunk.choices:  # empty in a trailing usage chunk
                    if choice.delta.content:
                        yield choice.delta.content
                usage = _token_usage(chunk.usage) or usage
        if usage is not None:
            yield usage

    async def _open_stream(self, request: Generate) -> Any:
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(request),
            "max_tokens": request.max_output_tokens,
            "temperature": request.temperature,
            "stream": True,
            "timeout": self.timeout,
        }
        if self.asks_stream_usage:
            try:
                return await self.client.chat.completions.create(
                    **arguments, stream_options={"include_usage": True}
                )
            except (BadRequestError, UnprocessableEntityError) as error:
                if not _refuses_stream_options(error):
                    raise
                self.asks_stream_usage = False
        return await self.client.chat.completions.create(**arguments)


def _token_usage(usage: CompletionUsage | None) -> TokenUsage | None:
    if usage is None or usage.prompt_tokens is None or usage.completion_tokens is None:
        return None
    return TokenUsage(usage.prompt_tokens, usage.completion_tokens)


def _refuses_stream_options(error: BadRequestError | UnprocessableEntityError) -> bool:
    """A 400 or 422 that names ``stream_options`` (or ``include_usage``): its message or
    body, in whatever shape the server gives its errors."""
    said = f"{error.message} {error.body}"
    return "stream_options" in said or "include_usage" in said


class OpenAIEmbedder:
    name = "openai"

    def __init__(
        self, settings: Any, client: AsyncOpenAI | None = None, *, max_retries: int = MAX_RETRIES
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
        response = await self.client.embeddings.create(
            model=self.space.model,
            input=batch,
            dimensions=self.space.dimensions,
            timeout=self.timeout,
        )
        vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        check_dimensions(vectors, self.space, self.where, "dimensions")
        return vectors
