"""What every connector is: a smallest real request (``test``) and every record, page by
page (``pages``), against the owner's data source.

A connector gets the kind's credential fields with their defaults filled in
(``ragcore.integrations.kinds.with_defaults``) and a ``Reach``: the time each request
gets, whether http:// to 127.0.0.1 is allowed (tests only), the HTTP client to use, where
it may connect (``ragio.integrations.connectors.addresses``) and how much one answer may
hold (``Capped``). Its failures are ``SourceFailed`` carrying the source's own reason,
with no credential in it: the reason is stored and shown to the owner. In a live query
(``Reach.live``) an HTTP source's error answer is told by its status alone, and a
database's failed statement by the error's kind (the connectors' ``run_statement`` and
``find``): the source's own words may quote the customer's values.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import attrs
import httpx

from ragcore.integrations.addresses import OwnDatabase, targets
from ragcore.targets.addresses import Reach as AddressRules
from ragcore.targets.addresses import url_refusal
from ragio.clock import Clock, SystemClock

log = logging.getLogger(__name__)
#: INTEGRATIONS_MAX_RESPONSE_MB's default, in bytes
MAX_RESPONSE_BYTES = 20 * 2**20


class SourceFailed(Exception):
    """The data source refused or failed; ``reason`` is its own words (never a secret)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@attrs.frozen
class Reach:
    """How a connector may reach its source."""

    timeout: float  # seconds for each request: connecting, a query, one page
    allow_http_loopback: bool  # http:// to 127.0.0.1 (INTEGRATIONS_ALLOW_HTTP_LOOPBACK)
    client: httpx.AsyncClient | None = None  # for the HTTP kinds; follows no redirects
    clock: Clock = attrs.field(factory=SystemClock)  # the service's (signed tokens' times)
    #: a live query (ragio.live.handlers): a driver call in a worker thread is left behind
    #: when the query's time is up (the thread ends on the driver's own timeout) rather
    #: than waited for, so the customer gets the failure on time
    abandon_on_cancel: bool = False
    #: the address rules (INTEGRATIONS_ALLOW_PRIVATE_TARGETS, the service's own port)
    targets: AddressRules = attrs.field(factory=targets)
    #: the service's own database: never a data source
    own_database: OwnDatabase = attrs.field(factory=OwnDatabase)
    allow_unix_sockets: bool = False  # INTEGRATIONS_ALLOW_UNIX_SOCKETS
    #: the most one answer may hold (INTEGRATIONS_MAX_RESPONSE_MB)
    max_response_bytes: int = MAX_RESPONSE_BYTES
    #: a live query: an error answer's reason is its status, not the source's words
    live: bool = False


Record = dict[str, Any]


class Connector(Protocol):
    async def test(self) -> str:
        """Make the smallest real request; say what answered (``SourceFailed`` if not)."""
        ...

    def pages(self) -> AsyncIterator[list[Record]]:
        """Every record, one page at a time, following the source's pagination to the end
        (the caller stops iterating at its bound). Records are JSON-shaped dicts."""
        ...


class ConnectorFactory(Protocol):
    def __call__(self, credentials: Mapping[str, str], reach: Reach) -> Connector: ...


def checked_base_url(url: str, reach: Reach, field: str) -> str:
    """``url`` without a trailing slash when it may be called: https, or http to
    127.0.0.1 when INTEGRATIONS_ALLOW_HTTP_LOOPBACK allows it; an address in any spelling
    judged by the address rules (a name is judged when it is connected to);
    ``SourceFailed`` naming ``field`` otherwise. Credentials in the URL are refused: they
    belong in their fields."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        raise SourceFailed(f"{field} must not carry a user or password; use the credential fields")
    plain_loopback = (
        parts.scheme == "http" and parts.hostname == "127.0.0.1" and reach.allow_http_loopback
    )
    if not (parts.scheme == "https" and parts.hostname) and not plain_loopback:
        raise SourceFailed(f"{field} must be an https:// URL, not {parts.scheme or 'no'} scheme")
    refusal = url_refusal(url, reach.targets)
    if refusal is not None:
        raise SourceFailed(f"{field}: {refusal}")
    return url.rstrip("/")


class Capped:
    """Counts what one answer of a source holds; ``SourceFailed`` once it is more than
    ``max_bytes`` (``too_big``), so nothing more is read."""

    def __init__(self, max_bytes: int, vendor: str = "") -> None:
        self.max_bytes = max_bytes
        self.vendor = vendor
        self.size = 0

    def add(self, size: int) -> None:
        self.size += size
        if self.size > self.max_bytes:
            raise SourceFailed(too_big(self.max_bytes, self.vendor))


def too_big(max_bytes: int, vendor: str = "") -> str:
    """The reason of an answer over the cap."""
    megabytes = max_bytes / 2**20
    said = (
        f"the source answered more than {megabytes:.3g} MB; nothing more was read "
        "(INTEGRATIONS_MAX_RESPONSE_MB)"
    )
    return f"{vendor}: {said}" if vendor else said


def size_of(value: Any) -> int:
    """About how many bytes ``value`` (a row, a document, one of their values) holds."""
    if isinstance(value, str | bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + size_of(v) for k, v in value.items()) + 2
    if isinstance(value, list | tuple):
        return sum(size_of(v) + 1 for v in value) + 2
    return 8 if value is None or isinstance(value, bool | int | float) else len(str(value))


def equal_records(records: list[Record], field: str, value: str, limit: int) -> list[Record]:
    """A live search done here, for sources with no search of their own (a sheet, a CSV
    file): the first ``limit`` records whose ``field`` equals ``value``, compared as text
    without surrounding spaces or case (``Ada@Example.com`` is ``ada@example.com``).
    ``SourceFailed`` when no record has the field at all (the template names a column
    the source lacks)."""
    if records and not any(field in record for record in records):
        raise SourceFailed(f"the source has no column {field!r}")
    wanted = value.strip().casefold()
    found = [r for r in records if str(r.get(field, "")).strip().casefold() == wanted]
    return found[:limit]
