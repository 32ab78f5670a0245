"""Shopify: the GraphQL Admin API, ``POST https://{shop_domain}/admin/api/{api_version}/
graphql.json`` with ``X-Shopify-Access-Token``, ``customers`` (or ``orders``)
``(first: 100, after: $cursor)`` read while ``pageInfo.hasNextPage``.

GraphQL errors come on HTTP 200 in ``errors``: ``THROTTLED`` is waited out (the time the
leaky bucket needs to hold the query's cost, from ``extensions.cost``) and sent again, a
bounded number of times; any other is the reason. ``shop_domain`` is a domain
(``example.myshopify.com``, called over https); a full URL is taken too, for a test
server on 127.0.0.1 when that is allowed.

A live action's search is the same connection with Shopify's ``query`` argument, in its
search syntax: ``field:"value"``, the value in double quotes with a quote or backslash
in it escaped by a backslash (``search_query``), and the whole search sent as a GraphQL
variable, never written into the GraphQL document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import trio

from ragcore.integrations.pages import (
    SHOPIFY_FIELDS,
    SOURCE_RETRY,
    Page,
    Throttled,
    reason,
    shopify_error,
    shopify_page,
    shopify_query,
)
from ragio.integrations.connectors.base import Reach, Record, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import CursorPaged, read_as, request

VENDOR = "Shopify"
_DOMAIN = re.compile(
    r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)
_VERSION = re.compile(r"^(\d{4}-\d{2}|unstable)$")
_FIELD = re.compile(r"^[a-z][a-z0-9_]*$")
SEARCH_LIMIT = 250  # the most one connection page returns


def search_query(field: str, value: str) -> str:
    """``field:"value"`` in Shopify's search syntax, the value escaped."""
    if not _FIELD.match(field):
        raise SourceFailed(f"Shopify: {field[:60]!r} is not a searchable field name")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{field}:"{escaped}"'


class Shopify(CursorPaged):
    vendor = VENDOR

    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._domain = credentials["shop_domain"].strip()
        self._token = credentials["access_token"]
        self.what = credentials.get("resource") or "customers"
        self._version = credentials.get("api_version") or "2025-07"
        self._reach = reach

    def _endpoint(self) -> str:
        if "://" in self._domain:
            base = checked_base_url(self._domain, self._reach, "shop_domain")
        elif _DOMAIN.match(self._domain):
            base = checked_base_url(f"https://{self._domain}", self._reach, "shop_domain")
        else:
            raise SourceFailed("Shopify: shop_domain must be a domain, e.g. example.myshopify.com")
        if not _VERSION.match(self._version):
            raise SourceFailed("Shopify: api_version must look like 2025-07")
        return f"{base}/admin/api/{self._version}/graphql.json"

    async def search(self, field: str, value: str, limit: int) -> list[Record]:
        """The records whose ``field`` equals ``value`` (at most ``limit``)."""
        if self.what not in SHOPIFY_FIELDS:
            raise SourceFailed(f"Shopify: resource must be one of {', '.join(SHOPIFY_FIELDS)}")
        document = (
            f"query Search($first: Int!, $query: String!) {{ {self.what}(first: $first, "
            f"query: $query) {{ nodes {{ {SHOPIFY_FIELDS[self.what]} }} "
            "pageInfo { hasNextPage endCursor } } }"
        )
        variables = {"first": min(limit, SEARCH_LIMIT), "query": search_query(field, value)}
        page = await self._post({"query": document, "variables": variables})
        return page.records[:limit]

    async def _page(self, first: int, cursor: str | None) -> Page:
        with read_as(VENDOR):
            query = shopify_query(self.what)
        payload: dict[str, Any] = {"query": query, "variables": {"first": first, "after": cursor}}
        return await self._post(payload)

    async def _post(self, payload: dict[str, Any]) -> Page:
        endpoint = self._endpoint()
        throttled = 0
        while True:
            body = await request(
                self._reach,
                VENDOR,
                "POST",
                endpoint,
                json=payload,
                headers={"x-shopify-access-token": self._token},
                describe=shopify_error,
                secrets=[self._token],
            )
            try:
                with read_as(VENDOR, [self._token]):
                    page = shopify_page(body, self.what)
            except SourceFailed:
                if not self._reach.live:
                    raise
                # its GraphQL errors may quote the search, the customer's value in it
                raise SourceFailed(f"{VENDOR}: the search failed (GraphQL errors)") from None
            if not isinstance(page, Throttled):
                return page
            throttled += 1
            if throttled > SOURCE_RETRY.max_retries:
                raise SourceFailed(reason(VENDOR, None, "Throttled (the query cost is too high)"))
            await trio.sleep(page.seconds)


def connect(credentials: Mapping[str, str], reach: Reach) -> Shopify:
    return Shopify(credentials, reach)
