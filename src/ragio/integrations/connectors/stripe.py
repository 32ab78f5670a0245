"""Stripe: ``GET /v1/customers?limit=100&starting_after=…`` with the secret (or
restricted) key as a Bearer token, while ``has_more``.

Records are Stripe's objects as listed. Stripe's own error message names a wrong key only
by its last four characters (``sk_test_****1234``); the reason is masked again anyway.
``api_base`` (default ``https://api.stripe.com``) takes a proxy or a test server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from ragcore.integrations.pages import Page, stripe_error, stripe_page
from ragio.integrations.connectors.base import Reach, Record, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import read_as, request

VENDOR = "Stripe"
API_BASE = "https://api.stripe.com"
PAGE_SIZE = 100
RESOURCES = ("customers",)


class Stripe:
    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._key = credentials["secret_key"]
        self._resource = credentials.get("resource") or "customers"
        self._base = credentials.get("api_base") or API_BASE
        self._reach = reach

    async def test(self) -> str:
        await self._page(1, None)
        return f"Stripe: {self._resource} readable"

    async def pages(self) -> AsyncIterator[list[Record]]:
        after: str | None = None
        while True:
            page = await self._page(PAGE_SIZE, after)
            yield page.records
            if page.next is None:
                return
            after = page.next

    async def _page(self, limit: int, after: str | None) -> Page:
        if self._resource not in RESOURCES:
            raise SourceFailed(f"Stripe: resource must be one of {', '.join(RESOURCES)}")
        base = checked_base_url(self._base, self._reach, "api_base")
        params: dict[str, Any] = {"limit": limit}
        if after is not None:
            params["starting_after"] = after
        body = await request(
            self._reach,
            VENDOR,
            "GET",
            f"{base}/v1/{self._resource}",
            params=params,
            headers={"authorization": f"Bearer {self._key}"},
            describe=stripe_error,
            secrets=[self._key],
        )
        with read_as(VENDOR, [self._key]):
            return stripe_page(body)


def connect(credentials: Mapping[str, str], reach: Reach) -> Stripe:
    return Stripe(credentials, reach)
