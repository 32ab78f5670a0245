"""HubSpot CRM: ``GET /crm/v3/objects/{object_type}?limit=100&after=…`` with a private
app's token as a Bearer token, following ``paging.next.after`` to the end.

Records are HubSpot's objects as listed (``id``, ``properties``, ``createdAt``, …), so the
user field is ``properties.email``. ``api_base`` (default ``https://api.hubapi.com``)
takes a proxy or a test server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

from ragcore.integrations.pages import Page, hubspot_error, hubspot_page
from ragio.integrations.connectors.base import Reach, Record, checked_base_url
from ragio.integrations.connectors.web import read_as, request

VENDOR = "HubSpot"
API_BASE = "https://api.hubapi.com"
PAGE_SIZE = 100


class HubSpot:
    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._token = credentials["access_token"]
        self._object = credentials.get("object_type") or "contacts"
        self._base = credentials.get("api_base") or API_BASE
        self._reach = reach

    async def test(self) -> str:
        await self._page(1, None)
        return f"HubSpot: {self._object} readable"

    async def pages(self) -> AsyncIterator[list[Record]]:
        after: str | None = None
        while True:
            page = await self._page(PAGE_SIZE, after)
            yield page.records
            if page.next is None:
                return
            after = page.next

    async def _page(self, limit: int, after: str | None) -> Page:
        base = checked_base_url(self._base, self._reach, "api_base")
        params: dict[str, Any] = {"limit": limit}
        if after is not None:
            params["after"] = after
        body = await request(
            self._reach,
            VENDOR,
            "GET",
            f"{base}/crm/v3/objects/{quote(self._object, safe='')}",
            params=params,
            headers={"authorization": f"Bearer {self._token}"},
            describe=hubspot_error,
            secrets=[self._token],
        )
        with read_as(VENDOR, [self._token]):
            return hubspot_page(body)


def connect(credentials: Mapping[str, str], reach: Reach) -> HubSpot:
    return HubSpot(credentials, reach)
