"""Salesforce: an OAuth 2.0 token from ``{login_url}/services/oauth2/token``, then
``GET {instance_url}/services/data/vNN.N/query?q=SELECT … FROM …`` following
``nextRecordsUrl`` until ``done``.

The token request uses the client credentials flow when no username is given
(Salesforce's recommendation; it needs the org's My Domain as ``login_url`` and a run-as
user on the connected app), otherwise the username-password flow, whose password is the
user's password followed by the security token. The ``instance_url`` the token answer
names is checked like any base URL, and every ``nextRecordsUrl`` must stay on it. A
session that expires during a long read (a 401 on a later page) is renewed once and the
page asked for again.
Records are the rows without their ``attributes``; the user field is ``Email``.

A live action's search is a SOQL query through the same ``query`` resource:
``SELECT <fields> FROM <sobject> WHERE <field> = '<value>' LIMIT n``. SOQL has no bound
parameters over REST (its ``:name`` binding exists only in Apex), and the REST
``parameterizedSearch`` is a SOSL full-text search, not an equality, so the value is a
SOQL string literal escaped as Salesforce documents it (``soql_string``: backslash,
both quotes, newline, carriage return, tab, backspace and form feed take a backslash);
the field is checked as a name (``SOQL_NAME``), never taken as text.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping

from ragcore.integrations.pages import (
    SALESFORCE_API,
    Page,
    SalesforceSession,
    salesforce_error,
    salesforce_page,
    salesforce_session,
    salesforce_token_form,
    same_origin,
    soql,
)
from ragio.integrations.connectors.base import Reach, Record, SourceFailed, checked_base_url
from ragio.integrations.connectors.web import HttpFailed, read_as, request

VENDOR = "Salesforce"
LOGIN_URL = "https://login.salesforce.com"
SOQL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*$")
_SOQL_ESCAPES = {
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


def soql_string(value: str) -> str:
    """``value`` as a SOQL string literal, quotes included, escaped per SOQL's rules."""
    return "'" + "".join(_SOQL_ESCAPES.get(char, char) for char in value) + "'"


class Salesforce:
    def __init__(self, credentials: Mapping[str, str], reach: Reach) -> None:
        self._credentials = dict(credentials)
        self._reach = reach
        self._secrets = [
            credentials[name]
            for name in ("client_secret", "password", "security_token")
            if credentials.get(name)
        ]

    async def test(self) -> str:
        session = await self._session()
        page = await self._query(session, self._soql(limit=1))
        return f"Salesforce: {self._credentials.get('sobject', 'Contact')} readable" + (
            "" if page.records else " (no records yet)"
        )

    async def pages(self) -> AsyncIterator[list[Record]]:
        session = await self._session()
        page = await self._query(session, self._soql())
        while True:
            yield page.records
            if page.next is None:
                return
            with read_as(VENDOR, self._secrets):
                url = same_origin(session.instance_url, page.next, VENDOR)
            try:
                page = await self._get(session, url, None)
            except HttpFailed as failed:
                if failed.status != 401:
                    raise
                session = await self._session()
                with read_as(VENDOR, self._secrets):
                    url = same_origin(session.instance_url, url, VENDOR)
                page = await self._get(session, url, None)

    async def search(self, field: str, value: str, limit: int) -> list[Record]:
        """The records whose ``field`` equals ``value`` (at most ``limit``)."""
        if not SOQL_NAME.match(field):
            raise SourceFailed(f"Salesforce: {field[:60]!r} is not a field name")
        query = f"{self._soql()} WHERE {field} = {soql_string(value)} LIMIT {int(limit)}"
        session = await self._session()
        page = await self._query(session, query)
        return page.records[:limit]

    def _soql(self, limit: int | None = None) -> str:
        with read_as(VENDOR, self._secrets):
            return soql(
                self._credentials.get("sobject") or "Contact",
                self._credentials.get("fields") or "Id, Name, Email, Phone",
                limit,
            )

    async def _session(self) -> SalesforceSession:
        login = checked_base_url(
            self._credentials.get("login_url") or LOGIN_URL, self._reach, "login_url"
        )
        body = await request(
            self._reach,
            VENDOR,
            "POST",
            f"{login}/services/oauth2/token",
            data=salesforce_token_form(self._credentials),
            headers={"accept": "application/json"},
            describe=salesforce_error,
            secrets=self._secrets,
        )
        with read_as(VENDOR, self._secrets):
            session = salesforce_session(body)
        instance = checked_base_url(session.instance_url, self._reach, "instance_url")
        self._secrets.append(session.access_token)
        return SalesforceSession(session.access_token, instance)

    async def _query(self, session: SalesforceSession, query: str) -> Page:
        url = f"{session.instance_url}/services/data/{SALESFORCE_API}/query"
        return await self._get(session, url, {"q": query})

    async def _get(
        self, session: SalesforceSession, url: str, params: dict[str, str] | None
    ) -> Page:
        body = await request(
            self._reach,
            VENDOR,
            "GET",
            url,
            params=params,
            headers={"authorization": f"Bearer {session.access_token}"},
            describe=salesforce_error,
            secrets=self._secrets,
        )
        with read_as(VENDOR, self._secrets):
            return salesforce_page(body)


def connect(credentials: Mapping[str, str], reach: Reach) -> Salesforce:
    return Salesforce(credentials, reach)
