"""A fake Anthropic Messages API: a plain ASGI app speaking the documented wire format.

Serve it with ``tests.io.conftest.serve_app`` and give the SDK its URL as ``base_url``
(or as ANTHROPIC_BASE_URL); call ``close()`` before stopping the server.
It answers ``POST /v1/messages``, whole or streamed as server-sent events
(``message_start``, ``content_block_start``, ``ping``, ``content_block_delta``…,
``message_delta``, ``message_stop``), checks the key (``x-api-key``, or
``Authorization: Bearer`` as the SDK sends it since 2.0) and the
``anthropic-version`` header, and records every request. Errors are Anthropic's:
``{"type": "error", "error": {"type", "message"}, "request_id"}``. Tests script it
through its attributes:

- ``reply``: the assistant's text; streamed, it arrives word by word;
- ``model``: the model named in responses (None echoes the requested one);
- ``delay``: seconds to hang before answering (for timeouts);
- ``fail_next(status, retry_after=…)``: failures returned before any success
  (429 rate_limit_error, 500 api_error, 529 overloaded_error, 401…);
- ``break_stream_after``: send an ``error`` event (overloaded) after this many deltas;
- ``rejects_temperature``: answer a ``temperature`` with 400, as the newest models do.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from typing import Any

import attrs
import trio

from tests.io.fakes.openai_server import (
    Receive,
    Recorded,
    Scope,
    Send,
    _lifespan,
    _read_body,
    count_tokens,
    words,
)


@attrs.frozen
class Failure:
    status: int
    retry_after: str | None = None


class AnthropicError(Exception):
    def __init__(self, status: int, type: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.request_id = f"req_{uuid.uuid4().hex[:24]}"
        self.body = {
            "type": "error",
            "error": {"type": type, "message": message},
            "request_id": self.request_id,
        }
        self.headers = {"request-id": self.request_id, **(headers or {})}


_FAILURES = {
    400: ("invalid_request_error", "Your request was malformed."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


class FakeAnthropic:
    def __init__(self, api_key: str = "sk-ant-test-key", reply: str = "Hello from Claude.") -> None:
        self.api_key = api_key
        self.base_url = ""  # set by whoever serves it
        self.reply = reply
        self.model: str | None = None
        self.delay = 0.0
        self.break_stream_after: int | None = None
        self.rejects_temperature = False
        self.failures: deque[Failure] = deque()
        self.requests: list[Recorded] = []
        self._closing = trio.Event()

    # ------------------------------------------------------------ scripting

    def fail_next(self, status: int, *, retry_after: str | None = None, times: int = 1) -> None:
        """Answer the next ``times`` authorised requests with ``status``."""
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
        except AnthropicError as error:
            await _send_json(send, error.status, error.body, error.headers)

    async def _answer(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, body: Any, send: Send
    ) -> None:
        key = headers.get("x-api-key", "") or _bearer(headers.get("authorization", ""))
        if not key:
            raise AnthropicError(401, "authentication_error", "x-api-key header is required")
        if key != self.api_key:
            raise AnthropicError(401, "authentication_error", "invalid x-api-key")
        if not headers.get("anthropic-version"):
            raise AnthropicError(
                400, "invalid_request_error", "anthropic-version: header is required"
            )
        if self.delay:
            with trio.move_on_after(self.delay):
                await self._closing.wait()
        if self.failures:
            raise _failure(self.failures.popleft())
        if method != "POST" or path != "/v1/messages":
            raise AnthropicError(404, "not_found_error", f"Not Found: {method} {path}")
        if not isinstance(body, dict):
            raise AnthropicError(400, "invalid_request_error", "Request body is not valid JSON")
        await self._messages(body, send)

    async def _messages(self, body: dict[str, Any], send: Send) -> None:
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                raise AnthropicError(400, "invalid_request_error", f"{field}: Field required")
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            raise AnthropicError(
                400, "invalid_request_error", "messages: at least one message is required"
            )
        temperature = body.get("temperature", 1.0)
        if "temperature" in body and self.rejects_temperature:
            raise AnthropicError(
                400, "invalid_request_error", "`temperature` is deprecated for this model."
            )
        if not 0 <= temperature <= 1:
            raise AnthropicError(
                400, "invalid_request_error", "temperature: Input should be less than or equal to 1"
            )
        model = self.model or body["model"]
        texts = [str(body.get("system") or "")] + [str(m.get("content") or "") for m in messages]
        input_tokens = sum(count_tokens(text) for text in texts)
        output_tokens = count_tokens(self.reply)
        ident = f"msg_{uuid.uuid4().hex[:24]}"
        if not body.get("stream"):
            await _send_json(
                send,
                200,
                {
                    "id": ident,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": self.reply}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
                },
            )
            return

        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": _headers({"content-type": "text/event-stream; charset=utf-8"}),
            }
        )
        start = {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }
        await _event(send, "message_start", {"type": "message_start", "message": start})
        await _event(
            send,
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        await _event(send, "ping", {"type": "ping"})
        for number, piece in enumerate(words(self.reply), start=1):
            if self.break_stream_after is not None and number > self.break_stream_after:
                error = {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"},
                }
                await _event(send, "error", error, more=False)
                return
            delta = {"type": "text_delta", "text": piece}
            await _event(
                send,
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": delta},
            )
        await _event(send, "content_block_stop", {"type": "content_block_stop", "index": 0})
        await _event(
            send,
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
        await _event(send, "message_stop", {"type": "message_stop"}, more=False)


# ---------------------------------------------------------------- plumbing


def _failure(failure: Failure) -> AnthropicError:
    type, message = _FAILURES.get(failure.status, ("api_error", "Internal server error"))
    headers = {"retry-after": failure.retry_after} if failure.retry_after is not None else {}
    return AnthropicError(failure.status, type, message, headers)


def _bearer(authorization: str) -> str:
    scheme, _, token = authorization.partition(" ")
    return token if scheme.lower() == "bearer" else ""


def _headers(extra: dict[str, str]) -> list[tuple[bytes, bytes]]:
    merged = {"request-id": f"req_{uuid.uuid4().hex[:24]}", **extra}
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


async def _event(send: Send, name: str, data: dict[str, Any], *, more: bool = True) -> None:
    payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
    await send({"type": "http.response.body", "body": payload, "more_body": more})
