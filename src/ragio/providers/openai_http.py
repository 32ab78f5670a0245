"""How ragio.providers.openai sends its requests: as the ``openai`` SDK sends them, without
the SDK's per-call machinery.

``client.chat.completions.create`` and ``client.embeddings.create`` cost about 1 ms of CPU
a call besides the HTTP client's own (copying and checking their options, building the
request and its headers, a pydantic object of every reply and of every streamed chunk),
and a streamed answer ~3.5 ms (measured with scripts/bench_providers.py). So each
request is posted here,
on the SDK client's own ``httpx2.AsyncClient`` (the one ``checking_replies`` checks, see
ragio.providers.wire), with what the SDK would send and do:

- the same URL (the client's ``base_url`` and the path), compact JSON body, key
  (``Authorization: Bearer``), ``User-Agent``, ``Content-Type`` and ``Accept``, the
  client's organization, project and default headers; ``PROVIDER_TIMEOUT_SECONDS``;
- the same retries (``max_retries`` of the client, 2 by default): after a timeout or a
  connection that failed, and after the statuses the client's ``_should_retry`` retries
  (408, 409, 429, 5xx, or as ``x-should-retry`` says; never past a ``Retry-After`` over the
  SDK's bound), waiting ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) up
  to that bound, else the SDK's backoff (0.5 s doubling, at most 8 s, less up to 25 %);
- the same errors: ``APITimeoutError``, ``APIConnectionError``, the status errors the
  client makes of a response (``_make_status_error_from_response``), an in-band error event
  of a stream as ``APIError`` (see ragio.providers.failures for what each is).

The reply is read as JSON (``read_json``) or as server-sent events (``EventStream``) by
the caller, which checks what it holds.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from random import random
from typing import Any

import anyio
import httpx2
import trio
from openai import APIConnectionError, APIError, APITimeoutError, AsyncOpenAI

# The SDK's backoff: the first wait and the longest; and the longest Retry-After it honours
# (its ``_should_retry`` does not retry after a longer one: the error is raised at once).
from openai._constants import INITIAL_RETRY_DELAY, MAX_RETRY_AFTER_DELAY, MAX_RETRY_DELAY

from ragio.providers.failures import BadReply
from ragio.providers.http11 import ConnectionFailed, Http11, TimedOut

log = logging.getLogger(__name__)

DRAIN_SECONDS = 0.1  # what is left of a stream after [DONE], read to reuse the connection

#: what a request raises when no response came, as the SDK catches it (with httpx's,
#: when the SDK was given an ``httpx.AsyncClient``)
_TIMEOUTS: tuple[type[Exception], ...] = (httpx2.TimeoutException, TimedOut)
_UNREACHABLE: tuple[type[Exception], ...] = (
    httpx2.RequestError,
    ssl.SSLError,
    anyio.EndOfStream,
    ConnectionFailed,
)
_DRAINED: tuple[type[Exception], ...] = (*_UNREACHABLE, httpx2.StreamError)  # ignored draining


class OpenAIHttp:
    """POSTs JSON to an OpenAI-compatible API through ``client``'s HTTP client, as the SDK
    would (see the module)."""

    def __init__(self, client: AsyncOpenAI, timeout: float) -> None:
        self.client = client
        self.http: Any = client._client  # httpx2's, or httpx's when one was injected
        self.base_url = str(client.base_url)  # ends with "/"
        self.max_retries = client.max_retries
        headers: dict[str, str] = {
            "Authorization": f"Bearer {client.api_key}",
            "Accept": "application/json",
            "Content-Type": "application/json",
            "User-Agent": client.user_agent,
        }
        if client.organization is not None:
            headers["OpenAI-Organization"] = client.organization
        if client.project is not None:
            headers["OpenAI-Project"] = client.project
        custom: Any = client._custom_headers
        headers.update((k, v) for k, v in custom.items() if isinstance(v, str))
        self.timeouts, self.unreachable = _TIMEOUTS, _UNREACHABLE
        library: Any = httpx2
        if not isinstance(self.http, httpx2.AsyncClient):
            import httpx

            library = httpx
            self.timeouts += (httpx.TimeoutException,)
            self.unreachable += (httpx.RequestError,)
        # made once: from strings, httpx would make them again for every request (~50 µs)
        self.library = library
        self.headers = library.Headers(headers)
        self.request_timeout = library.Timeout(timeout)
        self.urls: dict[str, Any] = {}
        # the plain connections httpx2 would make, without its per-call CPU (see http11)
        self.lean = Http11.for_client(self.http, self.base_url, headers, timeout)

    async def post(self, path: str, body: dict[str, Any], *, stream: bool = False) -> Any:
        """The 2xx response to ``body`` POSTed to ``path`` (below the base URL), read whole
        unless ``stream`` (then the caller closes it); the SDK's errors otherwise."""
        url = self.urls.get(path)
        if url is None:
            url = self.urls[path] = self.library.URL(self.base_url + path)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        encoded = content.encode()
        if self.lean is not None:
            return await self._post_lean(path, url, encoded, stream)
        for retries_taken in range(self.max_retries + 1):
            remaining = self.max_retries - retries_taken
            request = self.http.build_request(
                "POST", url, content=encoded, headers=self.headers, timeout=self.request_timeout
            )
            try:
                response = await self.http.send(request, stream=stream)
            except self.timeouts as error:
                if remaining > 0:
                    await self._sleep(path, retries_taken, None)
                    continue
                raise APITimeoutError(request=request) from error
            except self.unreachable as error:
                if remaining > 0:
                    await self._sleep(path, retries_taken, None)
                    continue
                raise APIConnectionError(request=request) from error
            if response.is_success:
                return response
            if remaining > 0 and self.client._should_retry(response):
                await response.aclose()
                await self._sleep(path, retries_taken, response.headers)
                continue
            if not response.is_closed:
                await response.aread()
            raise self.client._make_status_error_from_response(response) from None
        raise AssertionError("unreachable: the last try returns or raises")

    async def _post_lean(self, path: str, url: Any, encoded: bytes, stream: bool) -> Any:
        """``post`` on the lean client (ragio.providers.http11): the same retries and errors."""
        assert self.lean is not None
        for retries_taken in range(self.max_retries + 1):
            remaining = self.max_retries - retries_taken
            try:
                response = await self.lean.post(url, encoded)
                if not stream or not response.is_success:
                    try:
                        await response.aread()
                    except BaseException:
                        await response.aclose()
                        raise
            except TimedOut as error:
                if remaining > 0:
                    await self._sleep(path, retries_taken, None)
                    continue
                raise APITimeoutError(request=self.library.Request("POST", url)) from error
            except ConnectionFailed as error:
                if remaining > 0:
                    await self._sleep(path, retries_taken, None)
                    continue
                raise APIConnectionError(request=self.library.Request("POST", url)) from error
            if response.is_success:
                return response
            mirrored = response.as_httpx()
            if remaining > 0 and self.client._should_retry(mirrored):
                await self._sleep(path, retries_taken, mirrored.headers)
                continue
            raise self.client._make_status_error_from_response(mirrored) from None
        raise AssertionError("unreachable: the last try returns or raises")

    async def _sleep(self, path: str, retries_taken: int, headers: Any) -> None:
        """The SDK's wait before a retry (``_calculate_retry_timeout``)."""
        wait = self.client._parse_retry_after_header(headers)
        if wait is None or not math.isfinite(wait) or not 0 < wait <= MAX_RETRY_AFTER_DELAY:
            tries = min(retries_taken, 1000)
            backoff = min(INITIAL_RETRY_DELAY * pow(2.0, tries), MAX_RETRY_DELAY)
            wait = max(backoff * (1 - 0.25 * random()), 0)
        log.info(
            "Retrying POST %s in %f seconds (retry %i of %s)",
            path,
            wait,
            retries_taken + 1,
            self.max_retries,
        )
        await trio.sleep(wait)

    @contextmanager
    def reading(self, response: Any) -> Iterator[None]:
        """Around reading a streamed body: its failures as the SDK's stream raises them."""
        try:
            yield
        except self.timeouts as error:
            raise APITimeoutError(request=response.request) from error
        except self.unreachable as error:
            raise APIConnectionError(request=response.request) from error

    async def close(self) -> None:
        await self.client.close()
        if self.lean is not None:
            await self.lean.close()


def read_json(response: Any) -> Any:
    """The body of a whole response as JSON, whatever its Content-Type says (some
    compatible servers send JSON as text/plain); BadReply when it is not JSON."""
    try:
        return json.loads(response.content)
    except ValueError:  # JSONDecodeError, or bytes json.loads takes for UTF-16 or -32
        raise BadReply("a body that is not JSON") from None


async def drain(response: Any) -> None:
    """What is left of an HTTP/1.1 stream after its last event, read for a short while so
    that its connection is reused (as the SDK does after ``[DONE]``)."""
    if response.is_closed or response.http_version != "HTTP/1.1":
        return
    with trio.move_on_after(DRAIN_SECONDS):
        try:
            async for _ in response.stream:
                await trio.lowlevel.checkpoint()
        except _DRAINED:
            pass  # what was read is whole: its clean-up fails nothing


class EventStream:
    """Server-sent events of a streamed response, as the SDK reads them: ``feed`` each
    piece of the body as it arrives, and get the JSON of each event's data, in order,
    until ``data: [DONE]`` (then ``done``); an event whose JSON holds ``error`` raises
    ``APIError`` (an error reported mid-stream: OpenRouter's). Lines end with LF, CRLF
    or CR; comments and fields other than ``data`` are skipped; an event is dispatched by
    a blank line, so one cut off by the end of the body is not."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.done = False
        self._pending = b""  # the start of an event not yet ended, its line ends LF
        self._after_cr = False  # the last piece ended with a CR: an LF next is its CRLF

    def feed(self, piece: bytes) -> Iterator[Any]:
        if not piece:
            return
        if self._after_cr and piece[0] == 10:  # b"\n"
            piece = piece[1:]
        self._after_cr = piece.endswith(b"\r")
        if b"\r" in piece:
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pending = self._pending + piece if self._pending else piece
        while not self.done and (end := pending.find(b"\n\n")) >= 0:
            block, pending = pending[:end], pending[end + 2 :]
            self._pending = pending
            yield from self._event(block)
        self._pending = pending

    def _event(self, block: bytes) -> Iterator[Any]:
        if block.startswith(b"data: ") and b"\n" not in block:  # nearly every event
            data = block[6:].decode()
        else:
            fields = False  # as the SDK: an event of other fields only has data "" (no JSON)
            lines = []
            for line in block.split(b"\n"):
                name, _, value = line.partition(b":")
                if name in (b"event", b"id", b"retry"):
                    fields = True
                elif name == b"data":
                    fields = True
                    lines.append(value[1:] if value.startswith(b" ") else value)
            if not fields:  # blank lines, comments
                return
            data = b"\n".join(lines).decode()
        if data.startswith("[DONE]"):
            self.done = True
            return
        value = json.loads(data)
        if isinstance(value, dict) and value.get("error"):
            error = value["error"]
            message = error.get("message") if isinstance(error, dict) else None
            if not message or not isinstance(message, str):
                message = "An error occurred during streaming"
            raise APIError(message, self.response.request, body=error)
        yield value
