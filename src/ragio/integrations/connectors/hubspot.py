"""HubSpot CRM: ``GET /crm/v3/objects/{object_type}?limit=100&after=…`` with a private
app's token as a Bearer token, following ``paging.next.after`` to the end.

Records are HubSpot's objects as listed (``id``, ``properties``, ``createdAt``, …), so the
user field is ``properties.email``. ``api_base`` (default ``https://api.hubapi.com``)
takes a proxy or a test server.

A live action's search is HubSpot's own CRM search, ``POST /crm/v3/objects/{object_type}/
search`` with one filter group of one ``EQ`` filter: the value goes as a JSON string in
the filter, never into query text. ``properties.email`` and ``email`` name the same
property.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from ragcore.integrations.pages import Page, hubspot_error, hubspot_page
from ragio.integrations.connectors.base import Reach, Record, checked_base_url
from ragio.integrations.connectors.web import CursorPaged, read_as, request

API_BASE = "https://api.hubapi.com"
SEARCH_LIMIT = 200  # the most one search request returns


class HubSpot(CursorPaged):
    vendor = "HubSpot"
    cursor_param = "after"

    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._token = credentials["access_token"]
        self.what = credentials.get("object_type") or "contacts"
        self._base = credentials.get("api_base") or API_BASE
        self._reach = reach

    async def _page(self, limit: int, cursor: str | None) -> Page:
        base = checked_base_url(self._base, self._reach, "api_base")
        url = f"{base}/crm/v3/objects/{quote(self.what, safe='')}"
        page: Page = await self._get(url, limit, cursor, self._token, hubspot_error, hubspot_page)
        return page

    async def search(self, field: str, value: str, limit: int) -> list[Record]:
        """The objects whose property ``field`` equals ``value`` (at most ``limit``)."""
        base = checked_base_url(self._base, self._reach, "api_base")
        url = f"{base}/crm/v3/objects/{quote(self.what, safe='')}/search"
        name = field.removeprefix("properties.")
        equals = {"propertyName": name, "operator": "EQ", "value": value}
        payload = {
            "filterGroups": [{"filters": [equals]}],
            "limit": min(limit, SEARCH_LIMIT),
        }
        body = await request(
            self._reach,
            self.vendor,
            "POST",
            url,
            json=payload,
            headers={"authorization": f"Bearer {self._token}"},
            describe=hubspot_error,
            secrets=[self._token],
        )
        with read_as(self.vendor, [self._token]):
            return hubspot_page(body).records[:limit]


def connect(credentials: Mapping[str, str], reach: Reach) -> HubSpot:
    return HubSpot(credentials, reach)
