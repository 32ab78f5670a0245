"""The pure rules of the database connectors (``mysql``, ``postgresql``, ``mongodb``): where
to connect from the credential fields, a row as a JSON-shaped record, and a reason
with no credential in it.

Rows become JSON-shaped values (``json_shaped``): datetimes, dates and times as ISO 8601
text, ``Decimal`` as text (exact: a JSON number would round 12345678901234567.89),
bytes as base64 text, a duration as its seconds (a number), a float that JSON cannot
hold (NaN, infinity) as text, and anything else the driver returns (a UUID, an address)
as its text, or as the caller's ``other`` makes it.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import attrs

SECRET_MASK = "********"  # noqa: S105 - what stands for a secret


class BadAddress(ValueError):
    """The credentials do not say where to connect; ``reason`` says why (no secret)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@attrs.frozen
class Address:
    host: str
    port: int
    user: str
    password: str = attrs.field(repr=False)
    database: str


def address_of(credentials: Mapping[str, str], schemes: tuple[str, ...]) -> Address:
    """Where to connect: the ``url`` (one of ``schemes``, user and password
    percent-decoded) when given, else ``host``, ``port``, ``user``, ``password`` and
    ``database``. A URL's options (``?…``) are refused, not ignored: one may ask for TLS."""
    url = credentials.get("url")
    if not url:
        return Address(
            credentials.get("host", ""),
            _port(credentials.get("port", "")),
            credentials.get("user", ""),
            credentials.get("password", ""),
            credentials.get("database", ""),
        )
    parts = urlsplit(url)
    if parts.scheme not in schemes:
        raise BadAddress(f"url must begin with {schemes[0]}://")
    if parts.query:
        raise BadAddress(
            "url options (after ?) are not supported here; give host, port, user, "
            "password and database instead"
        )
    try:
        port = parts.port
    except ValueError:
        raise BadAddress("url has a port that is not a number from 1 to 65535") from None
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        raise BadAddress(f"url must name a host and a database: {schemes[0]}://user:…@host/db")
    return Address(
        parts.hostname,
        port or _port(credentials.get("port", "")),
        unquote(parts.username or ""),
        unquote(parts.password or ""),
        database,
    )


def secrets_of(credentials: Mapping[str, str], secret_fields: Iterable[str]) -> list[str]:
    """Every text a reason must not show: each secret field's value and, for a URL, its
    password as written and percent-decoded; longest first, so the longest is masked whole."""
    found: set[str] = set()
    for name in secret_fields:
        value = credentials.get(name)
        if not value:
            continue
        found.add(value)
        if "://" in value:
            try:
                password = urlsplit(value).password
            except ValueError:
                password = None
            if password:
                found.update({password, unquote(password)})
    return sorted(found, key=len, reverse=True)


def without_secrets(reason: str, secrets: Iterable[str]) -> str:
    """``reason`` on one line, every secret in it masked."""
    for secret in secrets:
        if secret:
            reason = reason.replace(secret, SECRET_MASK)
    return " ".join(line.strip() for line in reason.splitlines() if line.strip())


def server_name(version: str, default: str) -> str:
    """The server as ``SELECT VERSION()`` tells it: ``10.11.6-MariaDB-0+deb12u1`` is
    ``MariaDB 10.11.6``; a version without a product name is ``default`` and the version."""
    if version.startswith("5.5.5-") and "mariadb" in version.lower():
        version = version.removeprefix("5.5.5-")  # MariaDB's old prefix for replication
    number, _, rest = version.partition("-")
    if "mariadb" in rest.lower() or "mariadb" in number.lower():
        return f"MariaDB {number}"
    return f"{default} {number}" if number else default


def json_shaped(value: Any, other: Callable[[Any], Any] = str) -> Any:
    """``value`` as JSON can hold it (see the module's docstring); ``other`` turns a value
    of no type named here into one (its text by default)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.date | datetime.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {str(key): json_shaped(item, other) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_shaped(item, other) for item in value]
    converted = other(value)
    return str(value) if converted is value else json_shaped(converted, other)


def _port(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= 65535:
        raise BadAddress("port must be a number from 1 to 65535")
    return int(text)
