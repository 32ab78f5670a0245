"""Stripe: ``GET /v1/customers?limit=100&starting_after=…`` with the secret (or
restricted) key as a Bearer token, while ``has_more``.

Records are Stripe's objects as listed. Stripe's own error message names a wrong key only
by its last four characters (``sk_test_****1234``); the reason is masked again anyway.
``api_base`` (default ``https://api.stripe.com``) takes a proxy or a test server.

A live action's search is Stripe's Search API, ``GET /v1/customers/search?query=…``, the
query ``field:'value'`` in Stripe's search query language: the value quoted, a quote or
backslash in it escaped with a backslash (``search_query``), so it is always one
string value; the field must be a plain field name (``email``, ``name``, ``phone``) or
``metadata.<key>`` (``metadata['key']``). Search results may lag a write by a minute
(Stripe says so); that is the source's own freshness.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ragcore.integrations.pages import Page, stripe_error, stripe_page
from ragio.integrations.connectors.base import Reach, Record, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import CursorPaged, read_as, request

API_BASE = "https://api.stripe.com"
RESOURCES = ("customers",)
SEARCH_LIMIT = 100  # the most one search request returns
_FIELD = re.compile(r"^[a-z][a-z0-9_]*$")
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,40}$")


def search_query(field: str, value: str) -> str:
    """``field:'value'`` in Stripe's search query language, the value escaped."""
    if field.startswith("metadata.") and _METADATA_KEY.match(field[len("metadata.") :]):
        clause = f"metadata['{field[len('metadata.') :]}']"
    elif _FIELD.match(field):
        clause = field
    else:
        raise SourceFailed(f"Stripe: {field[:60]!r} is not a searchable field name")
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"{clause}:'{escaped}'"


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

    async def search(self, field: str, value: str, limit: int) -> list[Record]:
        """The objects whose ``field`` equals ``value`` (at most ``limit``)."""
        if self.what not in RESOURCES:
            raise SourceFailed(f"Stripe: resource must be one of {', '.join(RESOURCES)}")
        base = checked_base_url(self._base, self._reach, "api_base")
        params = {"query": search_query(field, value), "limit": min(limit, SEARCH_LIMIT)}
        body = await request(
            self._reach,
            self.vendor,
            "GET",
            f"{base}/v1/{self.what}/search",
            params=params,
            headers={"authorization": f"Bearer {self._key}"},
            describe=stripe_error,
            secrets=[self._key],
        )
        with read_as(self.vendor, [self._key]):
            return stripe_page(body).records[:limit]


def connect(credentials: Mapping[str, str], reach: Reach) -> Stripe:
    return Stripe(credentials, reach)
