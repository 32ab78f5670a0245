"""Shopify: the GraphQL Admin API, ``POST https://{shop_domain}/admin/api/{api_version}/
graphql.json`` with ``X-Shopify-Access-Token``, ``customers`` (or ``orders``)
``(first: 100, after: $cursor)`` read while ``pageInfo.hasNextPage``.

GraphQL errors come on HTTP 200 in ``errors``: ``THROTTLED`` is waited out (the time the
leaky bucket needs to hold the query's cost, from ``extensions.cost``) and sent again, a
bounded number of times; any other is the reason. ``shop_domain`` is a domain
(``example.myshopify.com``, called over https); a full URL is taken too, for a test
server on 127.0.0.1 when that is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import trio

from ragcore.integrations.pages import (
    SOURCE_RETRY,
    Page,
    Throttled,
    reason,
    shopify_error,
    shopify_page,
    shopify_query,
)
from ragio.integrations.connectors.base import Reach, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import CursorPaged, read_as, request

VENDOR = "Shopify"
_DOMAIN = re.compile(
    r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)
_VERSION = re.compile(r"^(\d{4}-\d{2}|unstable)$")


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

    async def _page(self, first: int, cursor: str | None) -> Page:
        with read_as(VENDOR):
            query = shopify_query(self.what)
        endpoint = self._endpoint()
        payload: dict[str, Any] = {"query": query, "variables": {"first": first, "after": cursor}}
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
            with read_as(VENDOR, [self._token]):
                page = shopify_page(body, self.what)
            if not isinstance(page, Throttled):
                return page
            throttled += 1
            if throttled > SOURCE_RETRY.max_retries:
                raise SourceFailed(reason(VENDOR, None, "Throttled (the query cost is too high)"))
            await trio.sleep(page.seconds)


def connect(credentials: Mapping[str, str], reach: Reach) -> Shopify:
    return Shopify(credentials, reach)
