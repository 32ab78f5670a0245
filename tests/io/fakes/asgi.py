"""What every fake provider server shares: the ASGI plumbing, request recording and the
scripted delay and failures. A subclass keeps only its provider's wire format: how it checks
the key, routes, frames errors and streams.

A plain ASGI callable rather than a framework keeps every byte on the wire visible:
status, headers, and each SSE event as its own body message.
"""

from __future__ import annotations

import json
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import attrs
import trio

Scope = dict[str, Any]

#: The bad replies every fake can give instead of its answer, each on an HTTP 200, as a
#: proxy, a captive portal or a half-compatible server might. ``garbage`` names one; each
#: fake gives it in its own API's shape, whole, streamed and for embeddings:
#:
#: - ``html``: an HTML page (``text/html``) instead of JSON or events;
#: - ``not json``: ``application/json`` (or events) whose body is cut off mid-JSON;
#: - ``no reply``: JSON without the reply's field: ``choices``, ``candidates``,
#:   ``content``; ``data`` or ``embeddings`` for vectors; events without it;
#: - ``empty list``: that field an empty list (``choices: []``…); streamed, no events at all;
#: - ``wrong types``: the text (or a vector) of the wrong type, such as a number;
#: - ``no text``: a well-formed reply with no text in it (a model that spent its whole
#:   allowance thinking, say); for embeddings, empty vectors.
#:
#: and, made by FakeServer of the bytes of whatever a fake sends (WIRE_GARBAGE; with
#: ``fail_next``, of its error response):
#:
#: - ``not utf-8``: bytes that are not UTF-8 (``\x00\xff…``) under the reply's own content
#:   type; for a stream, as the data of its first event;
#: - ``wrong charset``: the real reply, labelled ``charset=utf-16``, which does not decode it;
#: - ``bogus charset``: the real reply, labelled with a charset that is none (``base64``);
#: - ``cut off``: the real reply's first bytes under a Content-Length of the whole: the
#:   connection closes before the rest arrives;
#: - ``too large``: the real reply after TOO_LARGE bytes of blanks (in its first event's
#:   JSON, for a stream), more than the 1 MB MAX_PROVIDER_REPLY_BYTES tests set; a whole
#:   body says its Content-Length, a stream does not (nor does a gzipped one).
#:
#: ``nuls first`` (made on the wire, for whole replies; not one of GARBAGE): two NUL bytes
#: before the real reply, UTF-8 still, but ``json.loads`` takes bytes starting so for UTF-32.
#: ``ascii label`` (no garbage at all: a reply to be answered): the real reply labelled
#: ``charset=us-ascii``, as some servers label JSON.
WIRE_GARBAGE = ("not utf-8", "wrong charset", "bogus charset", "cut off", "too large")
NULS_FIRST = "nuls first"
ASCII_LABEL = "ascii label"
_ON_THE_WIRE = (*WIRE_GARBAGE, NULS_FIRST, ASCII_LABEL)
GARBAGE = (
    "html",
    "not json",
    "no reply",
    "empty list",
    "wrong types",
    "no text",
    *WIRE_GARBAGE,
)
NOT_UTF8 = b"\x00\xffthis is not json<<<"
CUT_AFTER = 16  # bytes of a reply sent before the connection closes: within its first event
TOO_LARGE = 3 * 2**19  # 1.5 MB
PIECE = 64 * 1024  # bytes of a large body sent at a time
HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in to the network</title></head>"
    b"<body><h1>Welcome</h1><p>Accept the terms to continue.</p></body></html>\n"
)
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@attrs.frozen
class Recorded:
    """One request as the fake received it; ``at`` is ``trio.current_time()`` on arrival."""

    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: Any  # the parsed JSON, or None
    at: float
    query: dict[str, list[str]] = attrs.field(factory=dict, repr=False)
    raw: bytes = attrs.field(default=b"", repr=False)
    raw_path: bytes = attrs.field(default=b"", repr=False)  # as sent: percent-encoded

    @property
    def malformed(self) -> bool:
        """A body was sent but it is not JSON."""
        return bool(self.raw) and self.body is None


@attrs.frozen
class Failure:
    status: int
    retry_after: str | None = None  # a Retry-After header
    retry_delay: str | None = None  # Gemini only: a google.rpc.RetryInfo retryDelay, "0.5s"
    more_headers: tuple[tuple[str, str], ...] = ()  # x-should-retry, retry-after-ms…

    @property
    def headers(self) -> dict[str, str]:
        retry_after = {"retry-after": self.retry_after} if self.retry_after is not None else {}
        return {**retry_after, **dict(self.more_headers)}


class WireError(Exception):
    """An error response: each fake's subclass builds its provider's ``body``."""

    def __init__(
        self, status: int, message: str, body: dict[str, Any], headers: dict[str, str] | None
    ):
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = headers or {}


def encode_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


class FakeServer:
    """Records every request, answers it with ``_answer`` and sends a raised ``WireError``
    as its error response. ``in_flight`` and ``peak`` count requests being answered.
    ``gzip``: every response gzipped (a message at a time) to a client that accepts it."""

    base_path = ""  # where the SDK expects the API below the served URL
    json_type = "application/json"
    json_indent: int | None = None

    def __init__(self, api_key: str, reply: str) -> None:
        self.api_key = api_key
        self.base_url = ""  # "<served at><base_path>", set by whoever serves it
        self.reply = reply
        self.delay = 0.0
        self.failures: deque[Failure] = deque()
        self.garbage: str | None = None  # one of GARBAGE: answer with it instead of the reply
        self.gzip = False  # gzip every response to a client that accepts it
        #: which requests get ``garbage``; None: every one after the key check
        self.garbage_for: Callable[[Recorded], bool] | None = None
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.peak = 0
        self._closing = trio.Event()

    # ------------------------------------------------------------ scripting

    def fail_next(
        self,
        status: int,
        *,
        retry_after: str | None = None,
        times: int = 1,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next ``times`` authorised requests with ``status`` (and ``headers``)."""
        more = tuple((headers or {}).items())
        self.failures.extend(Failure(status, retry_after, more_headers=more) for _ in range(times))

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def garbled(self, request: Recorded) -> str | None:
        """The bad reply ``request`` gets in its API's shape, or None for the real one (which
        FakeServer may then garble on the wire: ``WIRE_GARBAGE``)."""
        kind = self._garbage_of(request)
        return None if kind in _ON_THE_WIRE else kind

    def _garbage_of(self, request: Recorded) -> str | None:
        if self.garbage is None:
            return None
        if self.garbage not in (*GARBAGE, NULS_FIRST, ASCII_LABEL):
            raise ValueError(f"unknown garbage {self.garbage!r}; one of {GARBAGE}")
        if self.garbage_for is not None and not self.garbage_for(request):
            return None
        return self.garbage

    def close(self) -> None:
        """Release requests still hanging in ``delay`` so the server can shut down at once."""
        self._closing.set()

    # ------------------------------------------------------------ for subclasses

    async def _answer(self, request: Recorded, send: Send) -> None:
        raise NotImplementedError

    def _failure(self, failure: Failure) -> WireError:
        """The provider's error response for a scripted failure."""
        raise NotImplementedError

    def _response_headers(self) -> dict[str, str]:
        """Headers on every response, such as a request id."""
        return {}

    async def _scripted(self) -> None:
        """Hang for ``delay``, then raise the next scripted failure, if any."""
        if self.delay:
            with trio.move_on_after(self.delay):
                await self._closing.wait()
        if self.failures:
            raise self._failure(self.failures.popleft())

    async def _send_json(
        self, send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        await self._start(send, status, {"content-type": self.json_type, **(headers or {})})
        await send(
            {
                "type": "http.response.body",
                "body": json.dumps(body, indent=self.json_indent).encode(),
            }
        )

    async def _send_raw(self, send: Send, content_type: str, body: bytes) -> None:
        """A 200 with ``body`` as it is: for bad replies."""
        await self._start(send, 200, {"content-type": content_type})
        await send({"type": "http.response.body", "body": body})

    async def _start(self, send: Send, status: int, headers: dict[str, str]) -> None:
        merged = {**self._response_headers(), **headers}
        await send(
            {"type": "http.response.start", "status": status, "headers": encode_headers(merged)}
        )

    # ------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        raw = await _read_body(receive)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = scope["path"]
        if "://" in path:  # absolute-form, as sent to an HTTP proxy: the fake is both
            path = "/" + path.split("://", 1)[1].partition("/")[2]
        request = Recorded(
            scope["method"],
            path,
            headers,
            body,
            trio.current_time(),
            query,
            raw,
            scope.get("raw_path") or scope["path"].encode(),
        )
        self.requests.append(request)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.gzip and "gzip" in request.headers.get("accept-encoding", ""):
            send = _gzipping(send)
        wire = self._garbage_of(request)
        if wire in _ON_THE_WIRE:
            send = _garbling(wire, send)
        try:
            await self._answer(request, send)
        except WireError as error:
            await self._send_json(send, error.status, error.body, error.headers)
        finally:
            self.in_flight -= 1


async def send_event(send: Send, payload: str, *, more: bool = True) -> None:
    """One server-sent event, already framed, as its own body message."""
    await send({"type": "http.response.body", "body": payload.encode(), "more_body": more})


def _garbling(kind: str, send: Send) -> Send:
    """``send``, making ``kind`` (one of WIRE_GARBAGE) of a response: it is held until its
    last byte, then sent garbled."""
    start: dict[str, Any] = {}
    body: list[bytes] = []

    async def garbled(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] != "http.response.body":
            await send(message)
        else:
            body.append(message.get("body", b""))
            if not message.get("more_body"):
                await _send_garbled(kind, send, start, b"".join(body))

    return garbled


async def _send_garbled(kind: str, send: Send, start: dict[str, Any], body: bytes) -> None:
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
    media_type = content_type.split(b";")[0].strip()
    others = [(k, v) for k, v in headers if k.lower() != b"content-type"]
    if kind == "not utf-8":
        stream = media_type == b"text/event-stream"
        body = b"data: " + NOT_UTF8 + b"\n\n" if stream else NOT_UTF8
    elif kind in ("wrong charset", "bogus charset", ASCII_LABEL):
        charset = {"wrong charset": b"utf-16", "bogus charset": b"base64"}.get(kind, b"us-ascii")
        headers = [*others, (b"content-type", media_type + b"; charset=" + charset)]
    elif kind == NULS_FIRST:
        body = b"\x00\x00" + body
    elif kind == "too large":
        padding = b" " * TOO_LARGE
        if media_type == b"text/event-stream":
            head, data, rest = body.partition(b"data: ")
            body = head + data + padding + rest
        else:
            body = padding + body
            headers = [*headers, (b"content-length", str(len(body)).encode())]
    else:  # cut off
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        body = body[:CUT_AFTER]
    await send({**start, "headers": headers})
    try:
        for at in range(0, max(len(body), 1), PIECE):
            more = at + PIECE < len(body)
            await send(
                {"type": "http.response.body", "body": body[at : at + PIECE], "more_body": more}
            )
    except Exception:  # a body cut short (its HTTP/1.1 drops the line), or refused mid-way
        if kind not in ("cut off", "too large"):
            raise


def _gzipping(send: Send) -> Send:
    """``send``, gzipping the body a message at a time (Content-Encoding: gzip)."""
    packer = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)

    async def gzipped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
            message = {**message, "headers": [*headers, (b"content-encoding", b"gzip")]}
        elif message["type"] == "http.response.body":
            more = message.get("more_body", False)
            body = packer.compress(message.get("body", b""))
            body += packer.flush(zlib.Z_SYNC_FLUSH if more else zlib.Z_FINISH)
            message = {**message, "body": body}
        await send(message)

    return gzipped


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


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer an ASGI server's lifespan messages until shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
