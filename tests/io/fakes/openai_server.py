"""A fake OpenAI API: a plain ASGI app speaking the documented wire format.

Serve it with ``tests.io.conftest.serve_app``, set ``base_url`` to ``<url>/v1`` for the
SDK, and call ``close()`` before stopping the server.
It answers ``POST /v1/chat/completions`` (whole or streamed as server-sent
events) and ``POST /v1/embeddings`` (float or base64), checks the bearer key,
and records every request. Tests script it through its attributes:

- ``reply``: the assistant's text; streamed, it arrives word by word;
- ``model``: the model named in responses (None echoes the requested one,
  the real API names a dated snapshot such as ``gpt-4o-mini-2024-07-18``);
- ``embed``: ``(text, dimensions) -> vector``, by default a hashed bag of
  words, so texts sharing words get similar vectors;
- ``honour_dimensions``: False behaves like compatible servers that ignore
  ``dimensions`` and always return ``NATIVE_DIMENSIONS``;
- ``delay``: seconds to hang before answering (for timeouts);
- ``fail_next(status, retry_after=…)``: failures returned before any success.

A plain ASGI callable rather than a framework keeps every byte on the wire
visible here: status, headers, and each SSE event as its own body message.
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
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

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


@attrs.frozen
class Recorded:
    """One request as the fake received it; ``at`` is ``trio.current_time()`` on arrival."""

    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: Any  # the parsed JSON, or None
    at: float


@attrs.frozen
class Failure:
    status: int
    retry_after: str | None = None


class ApiError(Exception):
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
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": type, "param": param, "code": code}}
        self.headers = headers or {}


class FakeOpenAI:
    def __init__(self, api_key: str = "sk-test-key", reply: str = "Hello from the fake.") -> None:
        self.api_key = api_key
        self.base_url = ""  # "<served at>/v1", set by whoever serves it
        self.reply = reply
        self.model: str | None = None
        self.embed: Callable[[str, int], list[float]] = bag_of_words
        self.honour_dimensions = True
        self.delay = 0.0
        self.failures: deque[Failure] = deque()
        self.requests: list[Recorded] = []
        self._closing = trio.Event()

    # ------------------------------------------------------------ scripting

    def fail_next(self, status: int, *, retry_after: str | None = None, times: int = 1) -> None:
        """Answer the next ``times`` authorised requests with ``status`` (429 or 5xx)."""
        self.failures.extend(Failure(status, retry_after) for _ in range(times))

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def close(self) -> None:
        """Release requests still hanging in ``delay`` so the server can shut down at once."""
        self._closing.set()

    # ------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw = await _read_body(receive)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.requests.append(
            Recorded(scope["method"], scope["path"], headers, body, trio.current_time())
        )
        try:
            await self._answer(scope["method"], scope["path"], headers, raw, body, send)
        except ApiError as error:
            await _send_json(send, error.status, error.body, error.headers)

    async def _answer(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, body: Any, send: Send
    ) -> None:
        self._check_key(headers.get("authorization", ""))
        if self.delay:
            with trio.move_on_after(self.delay):
                await self._closing.wait()
        if self.failures:
            raise _failure(self.failures.popleft())
        if raw and body is None:
            raise ApiError(
                400, "We could not parse the JSON body of your request.", "invalid_request_error"
            )
        if method == "POST" and path == "/v1/chat/completions":
            await self._chat(_object(body), send)
        elif method == "POST" and path == "/v1/embeddings":
            await _send_json(send, 200, self._embeddings(_object(body)))
        else:
            raise ApiError(404, f"Invalid URL ({method} {path})", "invalid_request_error")

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
        model = self.model or body["model"]
        prompt_tokens = sum(count_tokens(str(m.get("content") or "")) for m in messages)
        completion_tokens = count_tokens(self.reply)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        if not body.get("stream"):
            await _send_json(
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
                                "content": self.reply,
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

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

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
        events += [chunk(delta({"content": piece})) for piece in words(self.reply)]
        events.append(chunk(delta({}, finish="stop")))
        if include_usage:
            events.append(chunk([], usage=usage))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": _headers({"content-type": "text/event-stream; charset=utf-8"}),
            }
        )
        for event in events:
            data = f"data: {json.dumps(event)}\n\n".encode()
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})

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


# ---------------------------------------------------------------- plumbing


def _failure(failure: Failure) -> ApiError:
    headers = {"retry-after": failure.retry_after} if failure.retry_after is not None else {}
    if failure.status == 429:
        return ApiError(
            429,
            "Rate limit reached for requests. Please try again later.",
            "requests",
            code="rate_limit_exceeded",
            headers=headers,
        )
    return ApiError(
        failure.status,
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        headers=headers,
    )


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", "invalid_request_error")
    return body


def _headers(extra: dict[str, str]) -> list[tuple[bytes, bytes]]:
    merged = {"x-request-id": f"req_{uuid.uuid4().hex}", **extra}
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in merged.items()]


async def _send_json(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": _headers({"content-type": "application/json", **(headers or {})}),
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


async def _read_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(parts)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
