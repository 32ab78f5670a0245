"""Stripe: ``GET /v1/customers?limit=100&starting_after=…`` with the secret (or
restricted) key as a Bearer token, while ``has_more``.

Records are Stripe's objects as listed. Stripe's own error message names a wrong key only
by its last four characters (``sk_test_****1234``); the reason is masked again anyway.
``api_base`` (default ``https://api.stripe.com``) takes a proxy or a test server.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragcore.integrations.pages import Page, stripe_error, stripe_page
from ragio.integrations.connectors.base import Reach, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import CursorPaged

API_BASE = "https://api.stripe.com"
RESOURCES = ("customers",)


class Stripe(CursorPaged):
    vendor = "Stripe"
    cursor_param = "starting_after"

    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._key = credentials["secret_key"]
        self.what = credentials.get("resource") or "customers"
        self._base = credentials.get("api_base") or API_BASE
        self._reach = reach

    async def _page(self, limit: int, cursor: str | None) -> Page:
        if self.what not in RESOURCES:
            raise SourceFailed(f"Stripe: resource must be one of {', '.join(RESOURCES)}")
        base = checked_base_url(self._base, self._reach, "api_base")
        url = f"{base}/v1/{self.what}"
        page: Page = await self._get(url, limit, cursor, self._key, stripe_error, stripe_page)
        return page


def connect(credentials: Mapping[str, str], reach: Reach) -> Stripe:
    return Stripe(credentials, reach)
