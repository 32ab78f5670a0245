"""A fake OpenAI API: a plain ASGI app speaking the documented wire format.

Serve it with the ``serve_fake`` fixture, which sets ``base_url`` to ``<url>/v1`` for
the SDK.
It answers ``POST /v1/chat/completions`` (whole or streamed as server-sent
events) and ``POST /v1/embeddings`` (float or base64), checks the bearer key,
and records every request. Tests script it through its attributes:

- ``reply``: the assistant's text; streamed, it arrives word by word;
- ``respond``: ``(request body) -> text``, when set, replaces ``reply`` (a reply that
  depends on the prompt, such as a judge's verdict);
- ``model``: the model named in responses (None echoes the requested one,
  the real API names a dated snapshot such as ``gpt-4o-mini-2024-07-18``);
- ``embed``: ``(text, dimensions) -> vector``, by default a hashed bag of
  words, so texts sharing words get similar vectors;
- ``honour_dimensions``: False behaves like compatible servers that ignore
  ``dimensions`` and always return ``NATIVE_DIMENSIONS``;
- ``delay``: seconds to hang before answering (for timeouts);
- ``chat_delay``: the same for chat completions only (a slow model, quick embeddings);
- ``word_delay``: seconds between streamed words after the first (a model's writing pace);
- ``fail_next(status, retry_after=…)``: failures returned before any success;
- ``stream_usage``: whether a streamed reply ends with the usage chunk: ``"asked"`` (when
  ``stream_options.include_usage`` is set, as OpenAI, vLLM and Ollama >= 0.5.2 do),
  ``"always"`` (as llama.cpp's server and OpenRouter do) or ``"never"`` (as older servers);
- ``rejects_stream_options``: a status to refuse ``stream_options`` with, as some compatible
  APIs do: 400 with Azure OpenAI's body, 422 with Mistral's validation error;
- ``break_stream_after``: end a streamed reply after this many text chunks with
  ``break_with``: ``"error"``, an error event (``data: {"error": {…}}``, as OpenRouter
  reports a failure mid-stream), or ``"not json"``, an event cut off mid-JSON;
- ``line_end``: how a streamed reply's lines end: ``"\\n"``, ``"\\r\\n"`` or ``"\\r"``, all of
  which server-sent events allow; ``keep_alive``: a comment before each event (OpenRouter
  sends ``: OPENROUTER PROCESSING`` while a model thinks); ``piecemeal``: each event sent
  a few bytes at a time, so that it arrives cut anywhere;
- ``garbage`` (and ``garbage_for``): a bad reply on a 200 instead of the real one, for chat
  completions, whole or streamed, and embeddings (see ``tests.io.fakes.asgi.GARBAGE``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import time
import uuid
from collections.abc import Callable
from typing import Any, Literal

import trio

from tests.io.fakes.asgi import (
    HTML_PAGE,
    Failure,
    FakeServer,
    Recorded,
    Send,
    WireError,
    send_event,
)

CHAT, EMBEDDINGS = "/v1/chat/completions", "/v1/embeddings"
NATIVE_DIMENSIONS = 1536  # text-embedding-3-small's size when `dimensions` is not sent
MAX_EMBEDDING_INPUTS = 2048  # the API's limit of inputs per embeddings request


def bag_of_words(text: str, dimensions: int) -> list[float]:
    """A unit vector of hashed word counts: deterministic, and texts sharing words score close."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if not norm:  # no words: still a valid unit vector, as the real API never returns zeros
        vector[0], norm = 1.0, 1.0
    return [v / norm for v in vector]


def words(text: str) -> list[str]:
    """How a streamed reply is cut into deltas: each word with the spaces after it."""
    return re.findall(r"\S+\s*|\s+", text)


def count_tokens(text: str) -> int:
    """A stand-in for the tokenizer: good enough for usage numbers that add up."""
    return len(text.split())


class ApiError(WireError):
    """Answered as OpenAI's error body: {"error": {"message", "type", "param", "code"}}."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        body = {"error": {"message": message, "type": type, "param": param, "code": code}}
        super().__init__(status, message, body, headers)


class FakeOpenAI(FakeServer):
    base_path = "/v1"

    def __init__(self, api_key: str = "sk-test-key", reply: str = "Hello from the fake.") -> None:
        super().__init__(api_key, reply)
        self.model: str | None = None
        self.embed: Callable[[str, int], list[float]] = bag_of_words
        self.honour_dimensions = True
        self.respond: Callable[[dict[str, Any]], str] | None = None
        self.chat_delay = 0.0
        self.word_delay = 0.0
        self.stream_usage: Literal["asked", "always", "never"] = "asked"
        self.rejects_stream_options: int | None = None
        self.break_stream_after: int | None = None
        self.break_with: Literal["error", "not json"] = "error"
        self.line_end: Literal["\n", "\r\n", "\r"] = "\n"
        self.keep_alive = False
        self.piecemeal = False

    def _response_headers(self) -> dict[str, str]:
        return {"x-request-id": f"req_{uuid.uuid4().hex}"}

    async def _answer(self, request: Recorded, send: Send) -> None:
        self._check_key(request.headers.get("authorization", ""))
        await self._scripted()
        if request.malformed:
            raise ApiError(
                400, "We could not parse the JSON body of your request.", "invalid_request_error"
            )
        method, path = request.method, request.path
        garbage = self.garbled(request)
        if garbage is not None and method == "POST" and path in (CHAT, EMBEDDINGS):
            await self._garbage(garbage, path, _object(request.body), send)
        elif method == "POST" and path == "/v1/chat/completions":
            await self._chat(_object(request.body), send)
        elif method == "POST" and path == "/v1/embeddings":
            await self._send_json(send, 200, self._embeddings(_object(request.body)))
        else:
            raise ApiError(404, f"Invalid URL ({method} {path})", "invalid_request_error")

    def _failure(self, failure: Failure) -> ApiError:
        if failure.status == 429:
            return ApiError(
                429,
                "Rate limit reached for requests. Please try again later.",
                "requests",
                code="rate_limit_exceeded",
                headers=failure.headers,
            )
        return ApiError(
            failure.status,
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            headers=failure.headers,
        )

    def _check_key(self, authorization: str) -> None:
        scheme, _, key = authorization.partition(" ")
        if scheme.lower() != "bearer" or not key:
            raise ApiError(
                401,
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                "invalid_request_error",
            )
        if key != self.api_key:
            shown = key[:3] + "*" * (len(key) - 7) + key[-4:] if len(key) > 10 else "***"
            raise ApiError(
                401,
                f"Incorrect API key provided: {shown}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                code="invalid_api_key",
            )

    # ------------------------------------------------------------ chat

    async def _chat(self, body: dict[str, Any], send: Send) -> None:
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not isinstance(messages, list) or not messages:
            raise ApiError(
                400,
                "'model' and a non-empty 'messages' array are required.",
                "invalid_request_error",
                param="messages",
            )
        if "stream_options" in body and self.rejects_stream_options is not None:
            raise _refusal(self.rejects_stream_options)
        if self.chat_delay:
            with trio.move_on_after(self.chat_delay):
                await self._closing.wait()
        model = self.model or body["model"]
        reply = self.respond(body) if self.respond is not None else self.reply
        prompt_tokens = sum(count_tokens(str(m.get("content") or "")) for m in messages)
        completion_tokens = count_tokens(reply)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        if not body.get("stream"):
            await self._send_json(
                send,
                200,
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": reply,
                                "refusal": None,
                            },
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                    "system_fingerprint": "fp_fake",
                },
            )
            return

        asked = bool((body.get("stream_options") or {}).get("include_usage"))
        include_usage = self.stream_usage == "always" or (self.stream_usage == "asked" and asked)

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            fields = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": choices,
            }
            if include_usage:  # every chunk carries "usage": null until the last one
                fields["usage"] = None
            return {**fields, **extra}

        def delta(content: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish}]

        events = [chunk(delta({"role": "assistant", "content": "", "refusal": None}))]
        events += [chunk(delta({"content": piece})) for piece in words(reply)]
        events.append(chunk(delta({}, finish="stop")))
        if include_usage:
            events.append(chunk([], usage=usage))
        await self._start(send, 200, {"content-type": "text/event-stream; charset=utf-8"})
        for number, event in enumerate(events):  # the first is the role, without text
            if self.break_stream_after is not None and number > self.break_stream_after:
                error = {"error": {"code": 502, "message": "Upstream provider error"}}
                cut = '{"choices": [{"delta": {"cont'
                broken = cut if self.break_with == "not json" else json.dumps(error)
                await send_event(send, f"data: {broken}\n\n", more=False)
                return
            if self.word_delay and number > 1:
                await trio.sleep(self.word_delay)
            await self._event(send, f"data: {json.dumps(event)}\n\n")
        await self._event(send, "data: [DONE]\n\n", more=False)

    async def _event(self, send: Send, payload: str, *, more: bool = True) -> None:
        """One event of a streamed reply, as ``line_end``, ``keep_alive`` and ``piecemeal``
        say to send it."""
        if self.keep_alive:
            payload = ": OPENROUTER PROCESSING\n\n" + payload
        payload = payload.replace("\n", self.line_end)
        if not self.piecemeal:
            await send_event(send, payload, more=more)
            return
        pieces = [payload[start : start + 5] for start in range(0, len(payload), 5)]
        for number, piece in enumerate(pieces, 1):
            await send_event(send, piece, more=more or number < len(pieces))
            await trio.sleep(0)

    # ------------------------------------------------------------ embeddings

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(body.get("model"), str)
            or not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(text, str) for text in inputs)
        ):
            raise ApiError(
                400,
                "'$.input' is invalid. Please check the API reference: "
                "https://platform.openai.com/docs/api-reference.",
                "invalid_request_error",
                param="input",
            )
        if len(inputs) > MAX_EMBEDDING_INPUTS:
            raise ApiError(
                400,
                f"'$.input' is invalid: at most {MAX_EMBEDDING_INPUTS} inputs "
                f"per request, got {len(inputs)}.",
                "invalid_request_error",
                param="input",
            )
        dimensions = body.get("dimensions") if self.honour_dimensions else None
        dimensions = dimensions or NATIVE_DIMENSIONS
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise ApiError(
                400,
                f"Invalid value for 'encoding_format': {encoding!r}.",
                "invalid_request_error",
                param="encoding_format",
            )
        data = []
        for index, text in enumerate(inputs):
            vector = self.embed(text, dimensions)
            if encoding == "base64":  # little-endian float32, as the real API sends
                packed = struct.pack(f"<{len(vector)}f", *vector)
                embedding: Any = base64.b64encode(packed).decode("ascii")
            else:
                embedding = vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(count_tokens(text) for text in inputs)
        return {
            "object": "list",
            "data": data,
            "model": self.model or body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    # ------------------------------------------------------------ bad replies

    async def _garbage(self, kind: str, path: str, body: dict[str, Any], send: Send) -> None:
        if kind == "html":
            await self._send_raw(send, "text/html; charset=utf-8", HTML_PAGE)
        elif path == EMBEDDINGS:
            await self._bad_embeddings(kind, body, send)
        elif body.get("stream"):
            await self._bad_stream(kind, body, send)
        elif kind == "not json":
            await self._send_raw(send, "application/json", b'{"id": "chatcmpl-1", "choi')
        else:
            completion = {
                "id": "chatcmpl-bad",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model or body["model"],
                "usage": {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10},
            }
            message: dict[str, Any] = {"role": "assistant", "content": ""}
            if kind == "wrong types":
                message["content"] = 42
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "length"}
            if kind == "empty list":
                completion["choices"] = []
            elif kind != "no reply":
                completion["choices"] = [choice]
            await self._send_json(send, 200, completion)

    async def _bad_stream(self, kind: str, body: dict[str, Any], send: Send) -> None:
        base = {"id": "chatcmpl-bad", "object": "chat.completion.chunk", "created": 1}
        base["model"] = self.model or body["model"]

        def delta(content: Any, finish: str | None = None) -> str:
            choice = {"index": 0, "delta": content, "logprobs": None, "finish_reason": finish}
            return json.dumps({**base, "choices": [choice]})

        if kind == "not json":
            events = ['{"id": "chatcmpl-bad", "choices": [{"delta": {"content": "It op']
        elif kind == "no reply":
            events = [json.dumps(base), json.dumps({**base, "system_fingerprint": "fp"})]
        elif kind == "empty list":
            events = []
        elif kind == "wrong types":
            events = [delta({"role": "assistant", "content": 42}), delta({}, "stop")]
        else:  # no text
            events = [delta({"role": "assistant", "content": ""}), delta({}, "length")]
        await self._start(send, 200, {"content-type": "text/event-stream; charset=utf-8"})
        for event in events:
            await send_event(send, f"data: {event}\n\n")
        await send_event(send, "data: [DONE]\n\n" if events else "", more=False)

    async def _bad_embeddings(self, kind: str, body: dict[str, Any], send: Send) -> None:
        if kind == "not json":
            await self._send_raw(send, "application/json", b'{"object": "list", "data": [{"ob')
            return
        inputs = body.get("input")
        count = len(inputs) if isinstance(inputs, list) else 1
        vector: Any = {"values": [0.5, 0.5]} if kind == "wrong types" else []
        data = [{"object": "embedding", "index": i, "embedding": vector} for i in range(count)]
        response: dict[str, Any] = {"object": "list", "model": self.model or body.get("model")}
        if kind != "no reply":
            response["data"] = [] if kind == "empty list" else data
        await self._send_json(send, 200, response)


# ---------------------------------------------------------------- plumbing


def _refusal(status: int) -> WireError:
    """How compatible APIs that do not know ``stream_options`` refuse it."""
    if status == 422:  # Mistral: a validation error, in its own shape
        detail = {
            "type": "extra_forbidden",
            "loc": ["body", "stream_options", "include_usage"],
            "msg": "Extra inputs are not permitted",
            "input": True,
        }
        body = {
            "object": "error",
            "message": {"detail": [detail]},
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
        return WireError(422, "Extra inputs are not permitted", body, None)
    return ApiError(  # Azure OpenAI, on API versions before stream_options
        status,
        "Unrecognized request argument supplied: stream_options",
        "invalid_request_error",
    )


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", "invalid_request_error")
    return body
