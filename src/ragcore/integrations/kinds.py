"""The kinds of data source and the credential fields each takes, as its users have them.

One table (``KINDS``) says, for every ``source_type``, which fields it takes, which are
required (or which alternatives: a database by ``url`` or by ``host`` and the rest), which
are secrets, and the field that names a user in its records by default. The rules of a
``POST``/``PATCH /integrations`` body are read from it; every credential field is stored
encrypted, and a secret one is never shown (``shown_credentials``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ragcore.errors import InvalidInput, check_text, refuse_unknown_fields
from ragcore.inputs import whole_number
from ragcore.integrations.settings import (
    AUTH_HEADER_PATTERN,
    SHOPIFY_VERSION_PATTERN,
    settings_refusal,
)

MAX_NAME_CHARS = 200
MAX_FIELD_CHARS = 4096
MAX_KEY_FILE_CHARS = 20_000  # a service-account JSON key file is about 2,400 characters
MASK = "********"
#: fields every kind takes, beside its credential fields
COMMON = ("name", "source_type", "user_field", "sync_interval_minutes")
READ_ONLY = ("id", "created_at", "updated_at", "credentials", "sync")
MAX_INTERVAL_MINUTES = 7 * 24 * 60
MAX_USER_FIELD_CHARS = 200
MAX_PORT = 65535


@attrs.frozen
class Field:
    """A credential field: its name, whether it is a secret (never shown), its default
    (None: none), and what it holds (for the API's description and its refusals)."""

    name: str
    meaning: str
    secret: bool = False
    default: str | None = None
    integer: bool = False  # a port
    max_chars: int = MAX_FIELD_CHARS
    pattern: str | None = None  # a form the schema states too (``settings``)


@attrs.frozen
class Kind:
    """A ``source_type``: its fields; ``required``: one tuple of field names per accepted
    alternative (all of one alternative must be given); the user field's default."""

    name: str
    fields: tuple[Field, ...]
    required: tuple[tuple[str, ...], ...]
    user_field: str
    description: str

    def field(self, name: str) -> Field | None:
        return next((field for field in self.fields if field.name == name), None)


def _database(name: str, scheme: str, port: int, what: str) -> Kind:
    return Kind(
        name,
        (
            Field("url", f"a connection URL, {scheme}://user:password@host:port/database", True),
            Field("host", "the server's host name or address"),
            Field("port", "the server's port", default=str(port), integer=True),
            Field("user", "the user to connect as (read access to the table is enough)"),
            Field("password", "that user's password", True),
            Field("database", "the database"),
            Field("table", "the table (or view) whose rows are synced, optionally schema.table"),
            Field("key_column", "the column that identifies a row", default="id"),
        ),
        (("url", "table"), ("host", "user", "database", "table")),
        "email",
        what,
    )


API_BASE = Field(
    "api_base",
    "the API's base URL, for a proxy or a test server (https; default: the vendor's)",
)

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        _database("mysql", "mysql", 3306, "MySQL or MariaDB"),
        _database("postgresql", "postgresql", 5432, "PostgreSQL"),
        Kind(
            "mongodb",
            (
                Field("url", "a connection string, mongodb://user:password@host:port", True),
                Field("database", "the database"),
                Field("collection", "the collection whose documents are synced"),
            ),
            (("url", "database", "collection"),),
            "email",
            "MongoDB, or a server speaking its wire protocol",
        ),
        Kind(
            "rest_api",
            (
                Field("base_url", "the API's base URL (https)"),
                Field(
                    "auth_header",
                    "the header that authenticates, as 'Name: value' (e.g. 'Authorization: "
                    "Bearer …')",
                    True,
                    pattern=AUTH_HEADER_PATTERN,
                ),
                Field("records_path", "the path that lists the records, e.g. /customers"),
                Field(
                    "records_key",
                    "the field of the response that holds the list (default: the response "
                    "is the list, or its data, results, items or records field)",
                ),
            ),
            (("base_url", "records_path"),),
            "email",
            "any JSON API that lists records, followed page by page",
        ),
        Kind(
            "hubspot",
            (
                Field("access_token", "a private app's access token", True),
                Field("object_type", "the CRM object synced", default="contacts"),
                API_BASE,
            ),
            (("access_token",),),
            "properties.email",
            "HubSpot CRM (a private app's token)",
        ),
        Kind(
            "salesforce",
            (
                Field("login_url", "the login host", default="https://login.salesforce.com"),
                Field("client_id", "the connected app's consumer key"),
                Field("client_secret", "the connected app's consumer secret", True),
                Field("username", "the user (username-password flow)"),
                Field("password", "that user's password", True),
                Field("security_token", "that user's security token", True),
                Field("sobject", "the object synced", default="Contact"),
                Field(
                    "fields",
                    "the fields synced, comma-separated",
                    default="Id, Name, Email, Phone",
                ),
            ),
            # client credentials (Salesforce's recommendation) or username-password
            (("client_id", "client_secret"),),
            "Email",
            "Salesforce (a connected app: client credentials, or username and password)",
        ),
        Kind(
            "shopify",
            (
                Field("shop_domain", "the shop's domain, e.g. example.myshopify.com"),
                Field("access_token", "an Admin API access token (shpat_…)", True),
                Field("resource", "what is synced: customers or orders", default="customers"),
                Field(
                    "api_version",
                    "the Admin API version",
                    default="2025-07",
                    pattern=SHOPIFY_VERSION_PATTERN,
                ),
            ),
            (("shop_domain", "access_token"),),
            "email",
            "Shopify (a custom app's Admin API token; GraphQL Admin API)",
        ),
        Kind(
            "google_sheets",
            (
                Field(
                    "service_account_json",
                    "the service account's JSON key file (the sheet shared with its e-mail)",
                    True,
                    max_chars=MAX_KEY_FILE_CHARS,
                ),
                Field("sheet_id", "the spreadsheet's id, from its URL"),
                Field("range", "the range read, in A1 notation; its first row names the columns"),
                API_BASE,
            ),
            (("service_account_json", "sheet_id"),),
            "email",
            "Google Sheets (a service account, read-only scope)",
        ),
        Kind(
            "stripe",
            (
                Field("secret_key", "a secret or restricted key (sk_… or rk_…)", True),
                Field("resource", "what is synced: customers", default="customers"),
                API_BASE,
            ),
            (("secret_key",),),
            "email",
            "Stripe (a secret or restricted API key)",
        ),
        Kind(
            "csv",
            (
                Field(
                    "content",
                    "the CSV file's text; its first row names the columns",
                    True,
                    max_chars=50 * 2**20,
                ),
            ),
            (("content",),),
            "email",
            "an uploaded CSV file",
        ),
    )
}
SOURCE_TYPES = tuple(KINDS)


@attrs.frozen
class NewIntegration:
    """A checked ``POST /integrations`` body; ``credentials``: the kind's fields given
    (defaults are not stored: they apply when the source is used)."""

    name: str
    source_type: str
    credentials: dict[str, str]
    user_field: str
    sync_interval_minutes: int | None = None


@attrs.frozen
class IntegrationPatch:
    """A checked ``PATCH``: the fields to change; ``credentials``: fields to set (a value
    of None removes an optional one); None elsewhere: unchanged."""

    name: str | None = None
    user_field: str | None = None
    sync_interval_minutes: int | None = None
    clear_interval: bool = False
    credentials: dict[str, str | None] = attrs.field(factory=dict)

    def credentials_from(self, stored: Mapping[str, str]) -> dict[str, str]:
        """``stored`` with the fields this patch sets, those it sets to null removed."""
        merged = {**stored, **self.credentials}
        return {name: value for name, value in merged.items() if value is not None}

    def interval_from(self, current: int | None) -> int | None:
        if self.clear_interval:
            return None
        return self.sync_interval_minutes if self.sync_interval_minutes is not None else current


def kind_named(value: Any) -> Kind:
    if not isinstance(value, str) or value not in KINDS:
        raise InvalidInput("source_type", f"must be one of {', '.join(SOURCE_TYPES)}")
    return KINDS[value]


def check_new(body: Mapping[str, Any]) -> NewIntegration:
    """A ``POST /integrations`` body: name, source_type and the kind's credential fields
    (unknown ones and missing ones named), user_field and sync_interval_minutes."""
    kind = kind_named(body.get("source_type"))
    _refuse_unknown(kind, body)
    credentials = _credentials(kind, body)
    missing = _missing(kind, credentials)
    if "name" not in body:
        missing = ["name", *missing]
    if missing:
        raise InvalidInput(", ".join(missing), f"{' and '.join(missing)} required for {kind.name}")
    given = {name: value for name, value in credentials.items() if value is not None}
    _refuse_settings(kind, given)
    return NewIntegration(
        check_text(body["name"], "name", MAX_NAME_CHARS),
        kind.name,
        given,
        _user_field(body.get("user_field", kind.user_field)),
        _interval(body.get("sync_interval_minutes")),
    )


def check_patch(kind: Kind, body: Mapping[str, Any], stored: Mapping[str, str]) -> IntegrationPatch:
    """A ``PATCH`` body for a source of ``kind`` whose credentials are ``stored``: the
    result must still have every required field; ``source_type`` cannot change."""
    if "source_type" in body and body["source_type"] != kind.name:
        raise InvalidInput("source_type", "cannot change: create a new data source instead")
    _refuse_unknown(kind, body)
    given = _credentials(kind, body)
    merged = {**stored, **given}
    missing = _missing(kind, {k: v for k, v in merged.items() if v is not None})
    if missing:
        raise InvalidInput(", ".join(missing), f"{' and '.join(missing)} required for {kind.name}")
    if given:  # the result judged whole; stored credentials alone are not judged again
        _refuse_settings(kind, {k: v for k, v in merged.items() if v is not None})
    interval = body.get("sync_interval_minutes")
    return IntegrationPatch(
        name=check_text(body["name"], "name", MAX_NAME_CHARS) if "name" in body else None,
        user_field=_user_field(body["user_field"]) if "user_field" in body else None,
        sync_interval_minutes=_interval(interval),
        clear_interval="sync_interval_minutes" in body and interval is None,
        credentials=given,
    )


def shown_credentials(kind: Kind, credentials: Mapping[str, str]) -> dict[str, str]:
    """What a response shows of the credentials: each field set, a secret one masked."""
    return {
        field.name: MASK if field.secret else credentials[field.name]
        for field in kind.fields
        if field.name in credentials
    }


def with_defaults(kind: Kind, credentials: Mapping[str, str]) -> dict[str, str]:
    """The credentials as a connector reads them: every field with a default filled in."""
    filled = {f.name: f.default for f in kind.fields if f.default is not None}
    return {**filled, **credentials}


def _refuse_settings(kind: Kind, credentials: Mapping[str, str]) -> None:
    """InvalidInput naming the field whose setting the connector could not use
    (``ragcore.integrations.settings``): refused as it is saved, not at every use."""
    refused = settings_refusal(kind.name, with_defaults(kind, credentials))
    if refused is not None:
        field, reason = refused  # the detail led by the field's name, as an address's
        reason = reason.removeprefix(f"{field}: ").removeprefix(f"{field} ")
        raise InvalidInput(field, f"{field}: {reason}")


def _refuse_unknown(kind: Kind, body: Mapping[str, Any]) -> None:
    known = [*COMMON, *(field.name for field in kind.fields)]
    refuse_unknown_fields(body, known, READ_ONLY, listing=f"the fields of {kind.name}")


def _credentials(kind: Kind, body: Mapping[str, Any]) -> dict[str, str | None]:
    """The kind's fields given in ``body``, checked; None for a field sent as null."""
    given: dict[str, str | None] = {}
    for field in kind.fields:
        if field.name not in body:
            continue
        value = body[field.name]
        if value is None:
            given[field.name] = None
        elif field.integer:
            given[field.name] = str(_port(value, field.name))
        else:
            given[field.name] = check_text(value, field.name, field.max_chars)
    return given


def _missing(kind: Kind, given: Mapping[str, str | None]) -> list[str]:
    """The fields ``given`` still lacks of the alternative it follows most (of those
    alike, the one closest to complete); none when one of them is whole."""

    def closeness(option: tuple[str, ...]) -> tuple[bool, int, int]:
        sent = sum(1 for name in option if given.get(name))
        return sent < len(option), -sent, len(option) - sent  # a whole one first

    option = min(kind.required, key=closeness)
    return [name for name in option if not given.get(name)]


def _user_field(value: Any) -> str:
    return check_text(value, "user_field", MAX_USER_FIELD_CHARS)


def _interval(value: Any) -> int | None:
    if value is None:
        return None
    minutes = whole_number(value)
    if minutes is None or not 1 <= minutes <= MAX_INTERVAL_MINUTES:
        raise InvalidInput(
            "sync_interval_minutes", f"must be a whole number from 1 to {MAX_INTERVAL_MINUTES}"
        )
    return minutes


def _port(value: Any, name: str) -> int:
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    port = whole_number(value)
    if port is None or not 1 <= port <= MAX_PORT:
        raise InvalidInput(name, f"must be a port: a whole number from 1 to {MAX_PORT}")
    return port
