"""What the HTTP connectors share: one request to a source, waited out and sent again on
429 and 503 as ``ragcore.integrations.pages.retry_wait`` says, and every failure turned
into ``SourceFailed`` with the vendor's own words, masked.

Each request gets ``reach.timeout`` and follows no redirect (a redirect could carry the
credentials elsewhere): it is a failure, named as one. When the caller gave no client,
one is made for the request (``source_client``: every connection judged by the address
rules and pinned to an address that passed).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
import trio

from ragcore.integrations.pages import Page, Unusable, reason, retry_wait
from ragio.integrations.connectors.addresses import source_client
from ragio.integrations.connectors.base import Reach, Record, SourceFailed

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
        response = await _send(reach, vendor, method, url, secrets, **kwargs)
        if response.is_success:
            if keep_headers is not None:
                keep_headers.update((k.lower(), v) for k, v in response.headers.items())
            try:
                return response.json()
            except ValueError:
                raise SourceFailed(
                    reason(vendor, response.status_code, "the answer is not JSON", secrets)
                ) from None
        status = response.status_code
        wait = retry_wait(
            attempts, status, response.headers.get("retry-after"), response.headers.get("date")
        )
        if wait is None:
            raise HttpFailed(reason(vendor, status, _message(response, describe), secrets), status)
        log.info("%s: HTTP %s; trying again in %.1f s", vendor, status, wait)
        await trio.sleep(wait)


async def _send(
    reach: Reach, vendor: str, method: str, url: str, secrets: tuple[str, ...], **kwargs: Any
) -> httpx.Response:
    try:
        if reach.client is not None:
            return await reach.client.request(
                method, url, timeout=reach.timeout, follow_redirects=False, **kwargs
            )
        async with source_client(reach) as client:
            return await client.request(
                method, url, timeout=reach.timeout, follow_redirects=False, **kwargs
            )
    except httpx.TimeoutException:
        raise SourceFailed(f"{vendor}: no answer within {reach.timeout:g} s") from None
    except httpx.TransportError as error:
        raise SourceFailed(
            reason(vendor, None, f"could not connect ({type(error).__name__})", secrets)
        ) from None
    except SourceFailed as refused:  # the address rules, when connecting (Guarded)
        raise SourceFailed(f"{vendor}: {refused.reason}") from None


def _message(response: httpx.Response, describe: Describe) -> str:
    if response.is_redirect:
        return "a redirect, which is not followed (is the base URL right?)"
    try:
        body = response.json()
    except ValueError:
        body = None
    return describe(body) or response.reason_phrase or "no details"


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
