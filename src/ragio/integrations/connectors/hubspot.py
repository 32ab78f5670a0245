"""HubSpot CRM: ``GET /crm/v3/objects/{object_type}?limit=100&after=…`` with a private
app's token as a Bearer token, following ``paging.next.after`` to the end.

Records are HubSpot's objects as listed (``id``, ``properties``, ``createdAt``, …), so the
user field is ``properties.email``. ``api_base`` (default ``https://api.hubapi.com``)
takes a proxy or a test server.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from ragcore.integrations.pages import Page, hubspot_error, hubspot_page
from ragio.integrations.connectors.base import Reach, checked_base_url
from ragio.integrations.connectors.web import CursorPaged

API_BASE = "https://api.hubapi.com"


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


def connect(credentials: Mapping[str, str], reach: Reach) -> HubSpot:
    return HubSpot(credentials, reach)
