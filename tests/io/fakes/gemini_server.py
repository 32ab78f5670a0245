"""A fake Gemini API: a plain ASGI app speaking the documented wire format.

Serve it with the ``serve_fake`` fixture and give the SDK its ``base_url``
(or set it as GOOGLE_GEMINI_BASE_URL).
It answers ``POST /{version}/models/{model}:generateContent``,
``:streamGenerateContent?alt=sse`` (server-sent events, one GenerateContentResponse
per event) and ``:batchEmbedContents`` (at most 100 requests per batch), checks the
``x-goog-api-key`` header (or ``?key=``), and records every request. Errors are
Google's: ``{"error": {"code", "message", "status", "details"}}`` — including the
real API's answer to a wrong key, which is a 400 INVALID_ARGUMENT with the reason
API_KEY_INVALID, not a 401. Tests script it through its attributes:

- ``reply``: the model's text; streamed, it arrives word by word;
- ``model_version``: the model named in responses (None echoes the requested one);
- ``embed``: ``(text, dimensions) -> vector``, by default a hashed bag of words;
- ``honour_dimensions``: False returns ``NATIVE_DIMENSIONS`` whatever was asked;
- ``delay``: seconds to hang before answering (for timeouts);
- ``fail_next(status, retry_delay=…, retry_after=…)``: failures returned before any success;
- ``break_stream_after``: send an error event after this many streamed text events;
- ``thoughts_tokens``: tokens the model spent thinking, reported as ``thoughtsTokenCount``
  (thinking models such as gemini-2.5-flash; their thought text is not returned);
- ``hold_first(n)``: the first ``n`` requests wait until all ``n`` are in flight together,
  so a client that never has ``n`` in flight hangs, and ``peak`` shows the most at once;
- ``garbage`` (and ``garbage_for``): a bad reply on a 200 instead of the real one, for
  generateContent, streamGenerateContent and batchEmbedContents (see
  ``tests.io.fakes.asgi.GARBAGE``); ``no text`` is what a thinking model that spent its whole
  allowance thinking sends: a candidate without parts, finishReason MAX_TOKENS.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

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
from tests.io.fakes.openai_server import bag_of_words, count_tokens, words

NATIVE_DIMENSIONS = 3072  # gemini-embedding-001's size when outputDimensionality is not sent
MAX_BATCH = 100  # the API's limit of requests per batchEmbedContents call
_PATH = re.compile(r"^/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>\w+)$")


class GoogleError(WireError):
    """Answered as Google's error body: {"error": {"code", "message", "status", "details"}}."""

    def __init__(
        self,
        code: int,
        message: str,
        status: str,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ):
        error: dict[str, Any] = {"code": code, "message": message, "status": status}
        if details:
            error["details"] = details
        super().__init__(code, message, {"error": error}, headers)


class FakeGemini(FakeServer):
    json_type = "application/json; charset=UTF-8"
    json_indent = 2

    def __init__(self, api_key: str = "gemini-test-key", reply: str = "Hello from Gemini.") -> None:
        super().__init__(api_key, reply)
        self.model_version: str | None = None
        self.embed: Callable[[str, int], list[float]] = bag_of_words
        self.honour_dimensions = True
        self.break_stream_after: int | None = None
        self.thoughts_tokens = 0
        self._hold = 0
        self._held = trio.Event()

    # ------------------------------------------------------------ scripting

    def fail_next(
        self,
        status: int,
        *,
        retry_delay: str | None = None,
        retry_after: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` authorised requests with ``status``."""
        failure = Failure(status, retry_after=retry_after, retry_delay=retry_delay)
        self.failures.extend(failure for _ in range(times))

    def hold_first(self, count: int) -> None:
        self._hold = count

    def requests_to(self, method: str) -> list[Recorded]:
        """Requests to one method, such as ``generateContent`` or ``batchEmbedContents``."""
        return [r for r in self.requests if r.path.endswith(f":{method}")]

    def close(self) -> None:
        super().close()
        self._held.set()  # and those held by hold_first

    # ------------------------------------------------------------ wire format

    def _response_headers(self) -> dict[str, str]:
        return {"x-goog-request-id": uuid.uuid4().hex, "server": "scaffolding on HTTPServer2"}

    async def _answer(self, request: Recorded, send: Send) -> None:
        query = request.query
        self._check_key(request.headers.get("x-goog-api-key") or (query.get("key") or [""])[0])
        if self._hold:
            if len(self.requests) >= self._hold:
                self._held.set()
            if len(self.requests) <= self._hold:
                await self._held.wait()
        await self._scripted()
        if request.malformed:
            raise GoogleError(
                400, "Invalid JSON payload received. Unexpected token.", "INVALID_ARGUMENT"
            )
        method, path, body = request.method, request.path, request.body
        match = _PATH.match(path)
        if method != "POST" or match is None:
            raise GoogleError(404, f"The requested URL {path} was not found.", "NOT_FOUND")
        model, verb = match["model"], match["method"]
        garbage = self.garbled(request)
        if garbage is not None and verb in _GARBLED:
            await self._garbage(garbage, model, verb, send)
        elif verb == "generateContent":
            await self._send_json(send, 200, self._generate(model, _object(body)))
        elif verb == "streamGenerateContent":
            if (query.get("alt") or [""])[0] != "sse":
                raise GoogleError(400, "This fake streams only with alt=sse.", "INVALID_ARGUMENT")
            await self._stream(model, _object(body), send)
        elif verb == "batchEmbedContents":
            await self._send_json(send, 200, self._batch_embed(model, _object(body)))
        else:
            raise GoogleError(
                404,
                f"models/{model} is not found for API version {match['version']}, or is not "
                f"supported for {verb}. Call ListModels to see the list of available models "
                "and their supported methods.",
                "NOT_FOUND",
            )

    def _failure(self, failure: Failure) -> GoogleError:
        status, message = _STATUS.get(failure.status, ("UNKNOWN", "Unknown error."))
        details = []
        if failure.retry_delay is not None:
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": failure.retry_delay,
                }
            )
        return GoogleError(failure.status, message, status, details, failure.headers)

    def _check_key(self, key: str) -> None:
        if not key:
            raise GoogleError(
                403,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to call "
                "this API.",
                "PERMISSION_DENIED",
            )
        if key != self.api_key:
            message = "API key not valid. Please pass a valid API key."
            raise GoogleError(
                400,
                message,
                "INVALID_ARGUMENT",
                details=[
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                        "metadata": {"service": "generativelanguage.googleapis.com"},
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                        "locale": "en-US",
                        "message": message,
                    },
                ],
            )

    # ------------------------------------------------------------ generation

    def _prompt_tokens(self, body: dict[str, Any]) -> int:
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise GoogleError(
                400,
                "* GenerateContentRequest.contents: contents is not specified\n",
                "INVALID_ARGUMENT",
            )
        texts = [
            str(part.get("text") or "")
            for content in [*contents, body.get("systemInstruction") or {}]
            for part in content.get("parts") or ()
        ]
        return sum(count_tokens(text) for text in texts)

    def _response(
        self,
        model: str,
        response_id: str,
        parts: list[dict[str, Any]],
        usage: dict[str, Any],
        finish: str | None,
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self.model_version or model,
            "responseId": response_id,
        }

    def _generate(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt = self._prompt_tokens(body)
        output = count_tokens(self.reply)
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output + self.thoughts_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
            **self._thoughts(),
        }
        return self._response(model, _response_id(), [{"text": self.reply}], usage, "STOP")

    def _thoughts(self) -> dict[str, int]:
        return {"thoughtsTokenCount": self.thoughts_tokens} if self.thoughts_tokens else {}

    async def _stream(self, model: str, body: dict[str, Any], send: Send) -> None:
        prompt = self._prompt_tokens(body)
        response_id = _response_id()
        pieces = words(self.reply)
        await self._start(send, 200, {"content-type": "text/event-stream"})
        sent = 0
        for number, piece in enumerate(pieces, start=1):
            if self.break_stream_after is not None and number > self.break_stream_after:
                error = self._failure(Failure(503)).body
                await _event(send, error, more=False)
                return
            # Each chunk carries the counts so far; only the last one names the candidates'.
            sent += count_tokens(piece)
            last = number == len(pieces)
            usage = {
                "promptTokenCount": prompt,
                "totalTokenCount": prompt + sent + self.thoughts_tokens,
                **self._thoughts(),
            }
            if last:
                usage["candidatesTokenCount"] = sent
            finish = "STOP" if last else None
            response = self._response(model, response_id, [{"text": piece}], usage, finish)
            await _event(send, response, more=not last)

    # ------------------------------------------------------------ embeddings

    def _batch_embed(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise GoogleError(
                400,
                "* BatchEmbedContentsRequest.requests: requests is not specified\n",
                "INVALID_ARGUMENT",
            )
        if len(requests) > MAX_BATCH:
            raise GoogleError(
                400,
                f"* BatchEmbedContentsRequest.requests: at most {MAX_BATCH} requests can be "
                "in one batch\n",
                "INVALID_ARGUMENT",
            )
        embeddings = []
        for request in requests:
            if request.get("model") != f"models/{model}":
                raise GoogleError(
                    400,
                    f"* BatchEmbedContentsRequest.model: model must be the same as "
                    f"BatchEmbedContentsRequest.requests[].model, got {request.get('model')!r}\n",
                    "INVALID_ARGUMENT",
                )
            text = "".join(
                str(part.get("text") or "") for part in request["content"].get("parts") or ()
            )
            asked = request.get("outputDimensionality") if self.honour_dimensions else None
            embeddings.append({"values": self.embed(text, asked or NATIVE_DIMENSIONS)})
        return {"embeddings": embeddings}

    # ------------------------------------------------------------ bad replies

    async def _garbage(self, kind: str, model: str, verb: str, send: Send) -> None:
        if kind == "html":
            await self._send_raw(send, "text/html; charset=utf-8", HTML_PAGE)
            return
        if verb == "batchEmbedContents":
            if kind == "not json":
                await self._send_raw(send, self.json_type, b'{\n  "embeddings": [\n    {"val')
                return
            values: Any = "0.5 0.5" if kind == "wrong types" else []
            embeddings = {"empty list": [], "no reply": None}.get(kind, [{"values": values}])
            await self._send_json(
                send, 200, {} if embeddings is None else {"embeddings": embeddings}
            )
            return
        usage = {"promptTokenCount": 10, "totalTokenCount": 10, "thoughtsTokenCount": 200}
        response: dict[str, Any] = {"usageMetadata": usage, "modelVersion": model}
        if kind == "wrong types":
            parts = [{"text": 42}]
            response["candidates"] = [{"content": {"parts": parts, "role": "model"}, "index": 0}]
        elif kind == "no text":  # thought to the end of the allowance: no parts at all
            candidate = {"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}
            response["candidates"] = [candidate]
        elif kind == "empty list":
            response["candidates"] = []
        if verb == "generateContent":
            if kind == "not json":
                await self._send_raw(send, self.json_type, b'{\n  "candidates": [\n    {"con')
            else:
                await self._send_json(send, 200, response)
            return
        await self._start(send, 200, {"content-type": "text/event-stream"})
        if kind == "not json":
            await send_event(send, 'data: {"candidates": [{"content": {"par\r\n\r\n', more=False)
        elif kind == "empty list":  # a stream without a single event
            await send_event(send, "", more=False)
        else:
            await _event(send, response, more=True)
            await _event(send, response, more=False)


# ---------------------------------------------------------------- plumbing

_GARBLED = ("generateContent", "streamGenerateContent", "batchEmbedContents")

_STATUS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: (
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential.",
    ),
    403: ("PERMISSION_DENIED", "Your API key was reported as leaked. Please use another API key."),
    404: ("NOT_FOUND", "Requested entity was not found."),
    429: (
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    500: (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "The request timed out. Please try again."),
}


def _response_id() -> str:
    return uuid.uuid4().hex[:22]


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise GoogleError(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
    return body


async def _event(send: Send, data: dict[str, Any], *, more: bool) -> None:
    """One server-sent event, framed as the API frames them: ``data: <json>\\r\\n\\r\\n``."""
    await send_event(send, f"data: {json.dumps(data)}\r\n\r\n", more=more)
