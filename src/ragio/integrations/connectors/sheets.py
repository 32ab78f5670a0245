"""Google Sheets: a service account's signed JWT (RS256, read-only scope, ``aud`` the key
file's ``token_uri``) exchanged at that ``token_uri`` for an access token, then
``GET /v4/spreadsheets/{sheet_id}/values/{range}``.

The first row names the columns and each further row is a record (``sheet_records``).
A blank ``range`` reads the first sheet, whose title ``spreadsheets.get`` gives. The
values API answers a range whole (it has no pages), so the rows come in one response and
are handed on in pages of ``PAGE_SIZE`` records. ``test`` signs in and reads the range's
first two rows. The sheet must be shared with the service account's e-mail.
``api_base`` (default ``https://sheets.googleapis.com``) takes a proxy or a test server;
the token URI is checked like any base URL.

A live action's search: the Sheets API has no query of its own over values, so the range
is read and its rows filtered here (``equal_records``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

from ragcore.integrations import google_auth
from ragcore.integrations.pages import (
    access_token,
    first_sheet,
    google_error,
    header_range,
    quoted_sheet,
    sheet_records,
    sheet_values,
)
from ragio.integrations.connectors.base import (
    Reach,
    Record,
    SourceFailed,
    checked_base_url,
    equal_records,
)
from ragio.integrations.connectors.web import read_as, request

VENDOR = "Google Sheets"
API_BASE = "https://sheets.googleapis.com"
PAGE_SIZE = 500


class GoogleSheets:
    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._key_file = credentials["service_account_json"]
        self._sheet = credentials["sheet_id"].strip()
        self._range = (credentials.get("range") or "").strip()
        self._base = credentials.get("api_base") or API_BASE
        self._reach = reach
        self._secrets: list[str] = []

    async def test(self) -> str:
        token = await self._token()
        range_ = await self._range_or_first(token)
        rows = await self._values(token, header_range(range_))
        with read_as(VENDOR, self._secrets):
            columns = len(rows[0]) if isinstance(rows, list) and rows else 0
        return f"Google Sheets: {range_} readable ({columns} columns)"

    async def pages(self) -> AsyncIterator[list[Record]]:
        token = await self._token()
        range_ = await self._range_or_first(token)
        values = await self._values(token, range_)
        with read_as(VENDOR, self._secrets):
            records = sheet_records(values)
        for start in range(0, len(records), PAGE_SIZE):
            yield records[start : start + PAGE_SIZE]

    async def search(self, field: str, value: str, limit: int) -> list[Record]:
        """The rows whose column ``field`` equals ``value`` (at most ``limit``)."""
        token = await self._token()
        values = await self._values(token, await self._range_or_first(token))
        with read_as(VENDOR, self._secrets):
            records = sheet_records(values)
        return equal_records(records, field, value, limit)

    async def _token(self) -> str:
        with read_as(VENDOR):
            account = google_auth.service_account(self._key_file)
        self._secrets = [account.private_key]
        token_uri = checked_base_url(account.token_uri, self._reach, "token_uri")
        with read_as(VENDOR, self._secrets):
            form = google_auth.token_form(account, self._reach.clock.now())
        self._secrets.append(form["assertion"])
        body = await request(
            self._reach,
            VENDOR,
            "POST",
            token_uri,
            data=form,
            describe=google_error,
            secrets=self._secrets,
        )
        with read_as(VENDOR, self._secrets):
            token = access_token(body, VENDOR)
        self._secrets.append(token)
        return token

    async def _range_or_first(self, token: str) -> str:
        if self._range:
            return self._range
        fields = {"fields": "sheets.properties.title"}
        body = await self._get(token, self._spreadsheet(), fields)
        with read_as(VENDOR, self._secrets):
            return quoted_sheet(first_sheet(body))

    async def _values(self, token: str, range_: str) -> object:
        url = f"{self._spreadsheet()}/values/{quote(range_, safe='!:')}"
        body = await self._get(token, url, {"majorDimension": "ROWS"})
        with read_as(VENDOR, self._secrets):
            return sheet_values(body)

    async def _get(self, token: str, url: str, params: dict[str, str]) -> Any:
        return await request(
            self._reach,
            VENDOR,
            "GET",
            url,
            params=params,
            headers={"authorization": f"Bearer {token}"},
            describe=google_error,
            secrets=self._secrets,
        )

    def _spreadsheet(self) -> str:
        base = checked_base_url(self._base, self._reach, "api_base")
        if not self._sheet or "/" in self._sheet:
            raise SourceFailed("Google Sheets: sheet_id must be the id from the sheet's URL")
        return f"{base}/v4/spreadsheets/{quote(self._sheet, safe='')}"


def connect(credentials: Mapping[str, str], reach: Reach) -> GoogleSheets:
    return GoogleSheets(credentials, reach)
