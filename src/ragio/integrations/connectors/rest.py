"""Any JSON API that lists records: ``GET base_url + records_path`` with the
``auth_header`` (``Name: value``), followed page by page.

Records: the body when it is a list, else its ``records_key`` field (dotted for nesting),
else the first of its ``data``, ``results``, ``items``, ``records`` fields that is a list.

The next page, the first of these found (``ragcore.integrations.pages.rest_page``):

1. a ``Link: <url>; rel="next"`` header (RFC 8288; GitHub, GitLab, many others);
2. a ``next`` URL in the body, at the top or in ``links`` or ``paging``;
3. a ``next_cursor`` (``nextCursor``, ``cursor``) field: the same request again with
   ``?cursor=<value>``.

No next page, or a page with no records, ends the listing. A next-page URL (absolute or
relative) must be on the base URL's origin: the header carries a credential, and a
listing that points elsewhere is refused rather than followed (SSRF). A cursor that
repeats ends the read with a failure rather than a loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from ragcore.integrations.pages import RestPage, auth_header, rest_error, rest_page, same_origin
from ragio.integrations.connectors.base import Reach, Record, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import read_as, request

VENDOR = "REST API"
MAX_PAGES = 100_000


class RestApi:
    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._base_url = credentials["base_url"].strip()
        self._path = credentials["records_path"].strip()
        self._records_key = (credentials.get("records_key") or "").strip() or None
        self._auth = (credentials.get("auth_header") or "").strip()
        self._reach = reach
        value = self._auth.partition(":")[2].strip()
        # the whole value, and its last word alone ("Bearer <token>": the token)
        self._secrets = [value, value.split()[-1]] if value else []

    async def test(self) -> str:
        page = await self._get(self._first_url(), None)
        return f"REST API: {self._path} readable ({len(page.records)} records on its first page)"

    async def pages(self) -> AsyncIterator[list[Record]]:
        url, cursor = self._first_url(), None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await self._get(url, cursor)
            yield page.records
            if not page.records:
                return
            if page.next_url is not None:
                with read_as(VENDOR, self._secrets):
                    url, cursor = same_origin(self._origin(), page.next_url, VENDOR), None
                mark = url
            elif page.cursor is not None:
                cursor = page.cursor
                mark = "cursor " + cursor
            else:
                return
            if mark in seen:
                raise SourceFailed(f"{VENDOR}: the next page repeats an earlier one; stopped")
            seen.add(mark)

    async def get(self, target: str, max_records: int) -> list[Record]:
        """A live action's read: ``GET base_url + target`` (``target``: the path and query
        as ``ragcore.live.templates.rest_target`` encoded them), on the base URL's origin
        only, with the auth header, no redirect followed. The records: a list body; an
        object's ``records_key`` list when that is set and present; else the object
        itself, as one record. At most ``max_records``."""
        with read_as(VENDOR, self._secrets):
            url = same_origin(self._origin(), self._origin() + target, VENDOR)
        body = await request(
            self._reach,
            VENDOR,
            "GET",
            url,
            headers=self._headers(),
            describe=rest_error,
            secrets=self._secrets,
        )
        with read_as(VENDOR, self._secrets):
            return live_records(body, self._records_key)[:max_records]

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if self._auth:
            with read_as(VENDOR):
                name, value = auth_header(self._auth)
            headers[name] = value
        return headers

    def _origin(self) -> str:
        return checked_base_url(self._base_url, self._reach, "base_url")

    def _first_url(self) -> str:
        path = self._path if self._path.startswith("/") else "/" + self._path
        url = self._origin() + path
        with read_as(VENDOR, self._secrets):
            return same_origin(self._origin(), url, VENDOR)

    async def _get(self, url: str, cursor: str | None) -> RestPage:
        headers = self._headers()
        # no params at all without a cursor: httpx would replace the URL's own query
        params: dict[str, Any] | None = {"cursor": cursor} if cursor is not None else None
        response_headers: dict[str, str] = {}
        body = await request(
            self._reach,
            VENDOR,
            "GET",
            url,
            params=params,
            headers=headers,
            describe=rest_error,
            secrets=self._secrets,
            keep_headers=response_headers,
        )
        with read_as(VENDOR, self._secrets):
            return rest_page(body, self._records_key, response_headers.get("link"))


def live_records(body: Any, records_key: str | None) -> list[Record]:
    """The records of one live answer (see ``RestApi.get``)."""
    if isinstance(body, list):
        return [item if isinstance(item, dict) else {"value": item} for item in body]
    if not isinstance(body, dict):
        return [{"value": body}]
    if records_key:
        value: Any = body
        for part in records_key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, list):
            return live_records(value, None)
    return [body]


def connect(credentials: Mapping[str, str], reach: Reach) -> RestApi:
    return RestApi(credentials, reach)
