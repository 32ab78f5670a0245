"""Anthropic's Messages API through the official ``anthropic`` SDK.

``AsyncAnthropic`` runs on anyio, so natively under Trio and every call is
cancellable. The SDK retries 408, 409, 429 and 5xx (529 "overloaded" too)
itself, honouring ``retry-after``; each request carries
PROVIDER_TIMEOUT_SECONDS, passed on the call as well as the client so an
injected client cannot drop it. Credentials come only from the settings: the
SDK is given the key explicitly, so it never reads ANTHROPIC_API_KEY or a
profile from the environment or the disk on its own.

DEFAULT_TEMPERATURE: the SDK (since 1.0) no longer takes ``temperature``, and
the newest models refuse it with a 400 ("`temperature` is deprecated for this
model") while older ones (the 4.5 and 4.6 families) still honour it. So it is
sent in the body, capped at the API's maximum of 1; a model that refuses it is
asked again without it, and not sent it again by this answerer.

Reading a reply: like OpenAI's, the SDK builds its objects without checking their shape
(and hands back a body that is not JSON as a string), so what is read is checked here: a
message without ``content``, text that is not a string or no text at all is a BadReply,
which moves on to the next provider. Token counts that are missing or not counts are
estimated rather than failing an answer that has its text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from anthropic import AnthropicError, AsyncAnthropic, BadRequestError, DefaultAsyncHttpxClient
from anthropic.types import Message, MessageParam

from ragcore.generation import Generate, ModelReply
from ragcore.settings import Settings
from ragcore.usage import TokenUsage, reported_usage
from ragio.providers.failures import BadReply, no_text, stream_without_text
from ragio.providers.wire import checking_replies

MAX_RETRIES = 2  # the SDK's default: rides out a brief rate limit without stalling a reply
MAX_TEMPERATURE = 1.0  # the Messages API takes 0..1; DEFAULT_TEMPERATURE may go up to 2


def make_client(
    settings: Settings, base_url: str | None = None, max_retries: int = MAX_RETRIES
) -> AsyncAnthropic:
    """``base_url`` None: api.anthropic.com (or ANTHROPIC_BASE_URL, as the SDK reads it)."""
    return AsyncAnthropic(
        api_key=settings.anthropic_api_key or "unset",
        base_url=base_url,
        timeout=settings.provider_timeout_seconds,
        max_retries=max_retries,
        http_client=checking_replies(
            DefaultAsyncHttpxClient(timeout=settings.provider_timeout_seconds),
            settings.max_provider_reply_bytes,
            RefusedReply,
        ),
    )


class RefusedReply(BadReply, AnthropicError):
    """A reply the client refused as it arrived (see ragio.providers.wire), as one of the
    SDK's own errors: it passes those on as they are, while it wraps any other error of
    its client as a connection error, and retries it."""


class AnthropicAnswerer:
    name = "anthropic"

    def __init__(
        self,
        settings: Settings,
        client: AsyncAnthropic | None = None,
        *,
        base_url: str | None = None,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.client = client or make_client(settings, base_url, max_retries)
        self.model = settings.anthropic_chat_model
        self.timeout = settings.provider_timeout_seconds
        self.sends_temperature = True  # until the model refuses it

    async def aclose(self) -> None:
        """Close the client's pooled connections; call it when the service shuts down."""
        await self.client.close()

    async def _create(self, request: Generate, **extra: Any) -> Any:
        messages: list[MessageParam] = [{"role": "user", "content": request.prompt.user}]
        arguments: dict[str, Any] = {
            "model": self.model,
            "system": request.prompt.system,
            "messages": messages,
            "max_tokens": request.max_output_tokens,
            "timeout": self.timeout,
            **extra,
        }
        if self.sends_temperature:
            temperature = min(request.temperature, MAX_TEMPERATURE)
            try:
                return await self.client.messages.create(
                    **arguments, extra_body={"temperature": temperature}
                )
            except BadRequestError as error:
                if not _refuses_temperature(error):
                    raise
                self.sends_temperature = False
        return await self.client.messages.create(**arguments)

    async def generate(self, request: Generate) -> ModelReply:
        """The whole reply, its text blocks joined; its ``model`` is the model that answered."""
        message: Message = await self._create(request)
        if isinstance(message, str):  # the SDK's answer to a body that is not JSON
            raise BadReply("a body that is not JSON")
        if not isinstance(message, Message):
            raise BadReply("JSON that is not a message")
        text = _message_text(message)
        usage = message.usage
        counts = reported_usage(
            getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", 0)
        )
        model = message.model if isinstance(message.model, str) and message.model else self.model
        return ModelReply(text, provider=self.name, model=model, usage=counts)

    async def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]:
        """The reply's text as the server produces it: each ``text_delta``, when not empty;
        then its token counts: the input tokens of ``message_start``, the output tokens of
        the last ``message_delta`` (the API's counts there are running totals).

        The timeout applies to connecting and to each wait for the next event, not to
        the whole reply. An ``error`` event mid-stream (say, ``overloaded_error``) raises
        the SDK's error. Stop early with ``aclose()``: that closes the HTTP response.
        """
        events = await self._create(request, stream=True)
        usage: TokenUsage | None = None
        wrote, stopped = False, None
        count = without_delta = 0
        async with events:
            async for event in events:
                count += 1
                kind = getattr(event, "type", None)
                if kind == "content_block_delta":
                    delta = getattr(event, "delta", None)
                    if delta is None:
                        without_delta += 1
                    elif getattr(delta, "type", None) == "text_delta":
                        text = getattr(delta, "text", None)
                        if not isinstance(text, str):
                            raise BadReply("events whose text is not a string")
                        if text:
                            wrote = wrote or bool(text.strip())
                            yield text
                elif kind == "message_start":
                    started = getattr(getattr(event, "message", None), "usage", None)
                    usage = reported_usage(
                        getattr(started, "input_tokens", None),
                        getattr(started, "output_tokens", 0),
                    )
                elif kind == "message_delta":
                    so_far = getattr(event, "usage", None)  # input_tokens too, on newer versions
                    prompt = getattr(so_far, "input_tokens", None)
                    if usage is not None:
                        usage = reported_usage(
                            usage.prompt_tokens if prompt is None else prompt,
                            getattr(so_far, "output_tokens", None),
                        )
                    stopped = getattr(getattr(event, "delta", None), "stop_reason", None)
            if not wrote:
                content_type = events.response.headers.get("content-type")
                missing = "their delta" if without_delta else None
                raise stream_without_text(content_type, count, missing, stopped, "stop reason")
        if usage is not None:
            yield usage


def _message_text(message: Message) -> str:
    """The text blocks joined, or BadReply saying what is wrong with the message."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise BadReply("JSON without content")
    texts: list[Any] = [getattr(block, "text", None) for block in content if _type(block) == "text"]
    if not all(isinstance(text, str) for text in texts):
        raise BadReply("text blocks whose text is not a string")
    text = "".join(texts)
    if not text.strip():
        raise no_text(getattr(message, "stop_reason", None), "stop reason")
    return text


def _type(block: Any) -> Any:
    return getattr(block, "type", None)


def _refuses_temperature(error: BadRequestError) -> bool:
    body: dict[str, Any] = error.body if isinstance(error.body, dict) else {}
    inner: Any = body.get("error") if isinstance(body.get("error"), dict) else body
    message = str(inner.get("message", ""))
    return "temperature" in message and "deprecated" in message
