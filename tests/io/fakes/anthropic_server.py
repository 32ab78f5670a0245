"""A fake Anthropic Messages API: a plain ASGI app speaking the documented wire format.

Serve it with the ``serve_fake`` fixture and give the SDK its ``base_url``
(or set it as ANTHROPIC_BASE_URL).
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
- ``rejects_temperature``: answer a ``temperature`` with 400, as the newest models do;
- ``garbage`` (and ``garbage_for``): a bad reply on a 200 instead of the real one, whole or
  streamed (see ``tests.io.fakes.asgi.GARBAGE``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.io.fakes.asgi import (
    HTML_PAGE,
    Failure,
    FakeServer,
    Recorded,
    Send,
    WireError,
    send_event,
)
from tests.io.fakes.openai_server import count_tokens, words


class AnthropicError(WireError):
    def __init__(self, status: int, type: str, message: str, headers: dict[str, str] | None = None):
        request_id = f"req_{uuid.uuid4().hex[:24]}"
        body = {
            "type": "error",
            "error": {"type": type, "message": message},
            "request_id": request_id,
        }
        super().__init__(status, message, body, {"request-id": request_id, **(headers or {})})


_FAILURES = {
    400: ("invalid_request_error", "Your request was malformed."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


class FakeAnthropic(FakeServer):
    def __init__(self, api_key: str = "sk-ant-test-key", reply: str = "Hello from Claude.") -> None:
        super().__init__(api_key, reply)
        self.model: str | None = None
        self.break_stream_after: int | None = None
        self.rejects_temperature = False

    def _response_headers(self) -> dict[str, str]:
        return {"request-id": f"req_{uuid.uuid4().hex[:24]}"}

    async def _answer(self, request: Recorded, send: Send) -> None:
        headers = request.headers
        key = headers.get("x-api-key", "") or _bearer(headers.get("authorization", ""))
        if not key:
            raise AnthropicError(401, "authentication_error", "x-api-key header is required")
        if key != self.api_key:
            raise AnthropicError(401, "authentication_error", "invalid x-api-key")
        if not headers.get("anthropic-version"):
            raise AnthropicError(
                400, "invalid_request_error", "anthropic-version: header is required"
            )
        await self._scripted()
        method, path = request.method, request.path
        if method != "POST" or path != "/v1/messages":
            raise AnthropicError(404, "not_found_error", f"Not Found: {method} {path}")
        if not isinstance(request.body, dict):
            raise AnthropicError(400, "invalid_request_error", "Request body is not valid JSON")
        garbage = self.garbled(request)
        if garbage is not None:
            await self._garbage(garbage, request.body, send)
        else:
            await self._messages(request.body, send)

    def _failure(self, failure: Failure) -> AnthropicError:
        type, message = _FAILURES.get(failure.status, ("api_error", "Internal server error"))
        return AnthropicError(failure.status, type, message, failure.headers)

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
            await self._send_json(
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

        await self._start(send, 200, {"content-type": "text/event-stream; charset=utf-8"})
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

    # ------------------------------------------------------------ bad replies

    async def _garbage(self, kind: str, body: dict[str, Any], send: Send) -> None:
        if kind == "html":
            await self._send_raw(send, "text/html; charset=utf-8", HTML_PAGE)
            return
        message: dict[str, Any] = {
            "id": "msg_bad",
            "type": "message",
            "role": "assistant",
            "model": self.model or body.get("model"),
            "stop_reason": "max_tokens",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 0},
        }
        if not body.get("stream"):
            if kind == "not json":
                await self._send_raw(send, "application/json", b'{"id": "msg_bad", "conte')
                return
            text: Any = 42 if kind == "wrong types" else ""
            if kind != "no reply":
                message["content"] = (
                    [] if kind == "empty list" else [{"type": "text", "text": text}]
                )
            await self._send_json(send, 200, message)
            return
        await self._start(send, 200, {"content-type": "text/event-stream; charset=utf-8"})
        if kind == "empty list":  # a stream without a single event
            await send_event(send, "", more=False)
            return
        if kind == "not json":
            await send_event(send, 'event: message_start\ndata: {"type": "message_st\n\n')
        else:
            start = {**message, "content": [], "stop_reason": None}
            await _event(send, "message_start", {"type": "message_start", "message": start})
            block = {"type": "content_block_start", "index": 0}
            await _event(
                send,
                "content_block_start",
                {**block, "content_block": {"type": "text", "text": ""}},
            )
            if kind == "no reply":  # deltas without their delta
                await _event(
                    send, "content_block_delta", {"type": "content_block_delta", "index": 0}
                )
            elif kind == "wrong types":
                delta = {"type": "text_delta", "text": 42}
                await _event(
                    send,
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                )
            await _event(send, "content_block_stop", {"type": "content_block_stop", "index": 0})
            finished = {"stop_reason": "max_tokens", "stop_sequence": None}
            await _event(
                send,
                "message_delta",
                {"type": "message_delta", "delta": finished, "usage": {"output_tokens": 0}},
            )
        await _event(send, "message_stop", {"type": "message_stop"}, more=False)


# ---------------------------------------------------------------- plumbing


def _bearer(authorization: str) -> str:
    scheme, _, token = authorization.partition(" ")
    return token if scheme.lower() == "bearer" else ""


async def _event(send: Send, name: str, data: dict[str, Any], *, more: bool = True) -> None:
    await send_event(send, f"event: {name}\ndata: {json.dumps(data)}\n\n", more=more)
