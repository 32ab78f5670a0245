"""What the HTTP connectors share: one request to a source, waited out and sent again on
429 and 503 as ``ragcore.integrations.pages.retry_wait`` says, and every failure turned
into ``SourceFailed`` with the vendor's own words, masked.

Each request gets ``reach.timeout`` and follows no redirect (a redirect could carry the
credentials elsewhere): it is a failure, named as one. When the caller gave no client,
one is made for the request (``source_client``: every connection judged by the address
rules and pinned to an address that passed). The body is read as it streams in and
counted: an answer of more than ``reach.max_response_bytes`` is a failure, the rest
never read. In a live query (``reach.live``) an error answer's reason is its status
alone: a vendor's message may quote the customer's values that were sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
import trio

from ragcore.integrations.pages import Page, Unusable, reason, retry_wait
from ragio.integrations.connectors.addresses import source_client
from ragio.integrations.connectors.base import Capped, Reach, Record, SourceFailed, too_big

log = logging.getLogger(__name__)
#: a vendor's error body -> its message (None: no usable one)
Describe = Callable[[Any], str | None]


class HttpFailed(SourceFailed):
    """The source answered with an error ``status`` (a connector may act on it: sign in
    again after a 401, say)."""

    def __init__(self, reason: str, status: int):
        super().__init__(reason)
        self.status = status


@contextmanager
def read_as(vendor: str, secrets: Iterable[str] = ()) -> Iterator[None]:
    """Turn the pure rules' ``Unusable`` into ``SourceFailed`` (masked)."""
    try:
        yield
    except Unusable as error:
        text = error.reason.removeprefix(f"{vendor}: ")
        raise SourceFailed(reason(vendor, None, text, secrets)) from None


async def request(
    reach: Reach,
    vendor: str,
    method: str,
    url: str,
    *,
    describe: Describe,
    secrets: Iterable[str] = (),
    keep_headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    """``method url`` (``kwargs``: params, headers, data, json); the parsed JSON body of
    the 2xx answer (its headers, names lowercased, into ``keep_headers`` if given), or
    ``SourceFailed``."""
    secrets = tuple(secrets)
    if url.startswith("http://"):  # checked_base_url let it: 127.0.0.1, with the setting
        parts = urlsplit(url)
        log.warning(
            "INTEGRATIONS_ALLOW_HTTP_LOOPBACK=true: calling %s over plain http (testing only)",
            f"{parts.scheme}://{parts.netloc}",
        )
    attempts = 0
    while True:
        attempts += 1
        answer = await _send(reach, vendor, method, url, secrets, **kwargs)
        if answer.is_success:
            if keep_headers is not None:
                keep_headers.update((k.lower(), v) for k, v in answer.headers.items())
            try:
                return json.loads(answer.body)
            except ValueError:
                raise SourceFailed(
                    reason(vendor, answer.status_code, "the answer is not JSON", secrets)
                ) from None
        status = answer.status_code
        wait = retry_wait(
            attempts, status, answer.headers.get("retry-after"), answer.headers.get("date")
        )
        if wait is None:
            message = _message(answer, describe, reach.live)
            raise HttpFailed(reason(vendor, status, message, secrets), status)
        log.info("%s: HTTP %s; trying again in %.1f s", vendor, status, wait)
        await trio.sleep(wait)


class _Answer:
    """A response and its body, read within the cap."""

    def __init__(self, response: httpx.Response, body: bytes) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self.reason_phrase = response.reason_phrase
        self.is_success = response.is_success
        self.is_redirect = response.is_redirect
        self.body = body


async def _send(
    reach: Reach, vendor: str, method: str, url: str, secrets: tuple[str, ...], **kwargs: Any
) -> _Answer:
    try:
        if reach.client is not None:
            return await _stream(reach.client, reach, vendor, method, url, **kwargs)
        async with source_client(reach) as client:
            return await _stream(client, reach, vendor, method, url, **kwargs)
    except httpx.TimeoutException:
        raise SourceFailed(f"{vendor}: no answer within {reach.timeout:g} s") from None
    except httpx.TransportError as error:
        raise SourceFailed(
            reason(vendor, None, f"could not connect ({type(error).__name__})", secrets)
        ) from None
    except SourceFailed as refused:  # the address rules (Guarded), or the cap
        if refused.reason.startswith(f"{vendor}: "):
            raise
        raise SourceFailed(f"{vendor}: {refused.reason}") from None


async def _stream(
    client: httpx.AsyncClient, reach: Reach, vendor: str, method: str, url: str, **kwargs: Any
) -> _Answer:
    """The answer, its body counted as it comes: past ``reach.max_response_bytes`` the
    connection is dropped and the rest never read (a Content-Length over it: not read)."""
    cap = Capped(reach.max_response_bytes, vendor)
    async with client.stream(
        method, url, timeout=reach.timeout, follow_redirects=False, **kwargs
    ) as response:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > reach.max_response_bytes:
            raise SourceFailed(too_big(reach.max_response_bytes, vendor))
        chunks: list[bytes] = []
        async for chunk in response.aiter_bytes():  # decoded: a compressed bomb counts whole
            cap.add(len(chunk))
            chunks.append(chunk)
        return _Answer(response, b"".join(chunks))


def _message(answer: _Answer, describe: Describe, live: bool) -> str:
    if answer.is_redirect:
        return "a redirect, which is not followed (is the base URL right?)"
    if live:  # the vendor's words may quote the values the query sent
        return answer.reason_phrase or httpx.codes.get_reason_phrase(answer.status_code)
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = None
    return describe(body) or answer.reason_phrase or "no details"


class CursorPaged:
    """A source read page by page, each page naming the cursor of the next (HubSpot's
    ``after``, Stripe's ``starting_after``, Shopify's ``endCursor``). A kind gives
    ``vendor``, ``what`` it reads and ``_page(limit, cursor)``."""

    vendor: ClassVar[str]
    page_size: ClassVar[int] = 100
    cursor_param: ClassVar[str] = ""  # the query parameter a REST kind's cursor goes in
    what: str
    _reach: Reach

    async def test(self) -> str:
        await self._page(1, None)
        return f"{self.vendor}: {self.what} readable"

    async def pages(self) -> AsyncIterator[list[Record]]:
        cursor: str | None = None
        while True:
            page = await self._page(self.page_size, cursor)
            yield page.records
            if page.next is None:
                return
            cursor = page.next

    async def _page(self, limit: int, cursor: str | None) -> Page:
        raise NotImplementedError

    async def _get(
        self, url: str, limit: int, cursor: str | None, token: str, describe: Describe, parse: Any
    ) -> Any:
        """``GET url`` for ``limit`` records from ``cursor`` on, with ``token`` as a Bearer
        token; its body as ``parse`` reads it."""
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params[self.cursor_param] = cursor
        body = await request(
            self._reach,
            self.vendor,
            "GET",
            url,
            params=params,
            headers={"authorization": f"Bearer {token}"},
            describe=describe,
            secrets=[token],
        )
        with read_as(self.vendor, [token]):
            return parse(body)
