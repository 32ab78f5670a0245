"""A data source's settings judged as they are saved: what its connector would refuse at
every test, sync and live query, found before anything is stored.

``settings_refusal(kind, credentials)`` reads the credentials as the connector will (the
defaults filled in) and says ``(field, reason)`` for the first that cannot be used: a
URL's scheme (https, or http to 127.0.0.1 for a test server) and host, a database URL's
scheme, host and database, a table or column name, the REST API's ``auth_header`` form
(``Name: value``), Salesforce's names and its username-password companions, Shopify's
domain, API version and resource, a Google service account's key file, Stripe's resource.
A reason never quotes a secret field's value. What only the source can answer (a host's
name, a token's validity) is left to its use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from ragcore.integrations import identifiers
from ragcore.integrations.addresses import URL_FIELDS
from ragcore.integrations.databases import BadAddress, address_of
from ragcore.integrations.google_auth import service_account
from ragcore.integrations.pages import SHOPIFY_FIELDS, Unusable, auth_header, soql

#: a header's name (RFC 9110 token), then a colon: the form of ``auth_header``
AUTH_HEADER_PATTERN = r"^\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*:"
SHOPIFY_VERSION_PATTERN = r"^(\d{4}-\d{2}|unstable)$"
SHOPIFY_DOMAIN = re.compile(
    r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)
STRIPE_RESOURCES = ("customers",)
DATABASE_SCHEMES = {
    "mysql": ("mysql", "mariadb", "mysql+pymysql"),
    "postgresql": ("postgresql", "postgres"),
}
MONGODB_SCHEMES = ("mongodb", "mongodb+srv")


class Refused(ValueError):
    def __init__(self, field: str, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(reason)


def settings_refusal(kind: str, credentials: Mapping[str, str]) -> tuple[str, str] | None:
    """``(field, reason)`` when ``credentials`` of ``kind`` (defaults filled in) hold a
    setting the connector cannot use; None when each is usable as far as text shows."""
    try:
        for field in URL_FIELDS.get(kind, ()):
            value = (credentials.get(field) or "").strip()
            if value and not (kind == "shopify" and "://" not in value):
                _url(field, value)
        _KIND_RULES.get(kind, _nothing)(credentials)
    except Refused as refused:
        return refused.field, refused.reason
    return None


def base_url_refusal(url: str, field: str) -> str | None:
    """Why ``url`` cannot be a source's base URL, as far as its text shows: https with a
    host (http only to 127.0.0.1, a test server), no user or password in it."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises)
    except ValueError:
        return f"{field} is not a URL"
    if parts.username or parts.password:
        return f"{field} must not carry a user or password; use the credential fields"
    loopback = parts.scheme == "http" and parts.hostname == "127.0.0.1"
    if not (parts.scheme == "https" and parts.hostname) and not loopback:
        return f"{field} must be an https:// URL, not {parts.scheme or 'no'} scheme"
    return None


def _url(field: str, value: str) -> None:
    refusal = base_url_refusal(value, field)
    if refusal is not None:
        raise Refused(field, refusal)


def _nothing(credentials: Mapping[str, str]) -> None:
    return None


def _database(kind: str) -> Callable[[Mapping[str, str]], None]:
    schemes = DATABASE_SCHEMES[kind]
    limits = identifiers.POSTGRESQL if kind == "postgresql" else identifiers.MYSQL

    def check(credentials: Mapping[str, str]) -> None:
        url = (credentials.get("url") or "").strip()
        if url and kind == "postgresql":
            # libpq reads the URL itself (its options too): only its scheme is judged here
            if urlsplit(url).scheme not in schemes:
                raise Refused("url", f"url must begin with {schemes[0]}://")
        elif url:
            try:
                address_of({**credentials, "url": url}, schemes)
            except BadAddress as bad:
                raise Refused("url", bad.reason) from None
        for field, read in (
            ("table", identifiers.split_table),
            ("key_column", identifiers.column_name),
        ):
            try:
                read(credentials.get(field, ""), limits, field)
            except identifiers.BadIdentifier as bad:
                raise Refused(field, bad.reason) from None

    return check


def _mongodb(credentials: Mapping[str, str]) -> None:
    url = (credentials.get("url") or "").strip()
    if url and not url.startswith(tuple(f"{scheme}://" for scheme in MONGODB_SCHEMES)):
        raise Refused("url", "url must begin with mongodb:// or mongodb+srv://")


def _rest_api(credentials: Mapping[str, str]) -> None:
    value = (credentials.get("auth_header") or "").strip()
    if value:
        try:
            auth_header(value)
        except Unusable:
            # the reason never quotes the value: it is a credential
            raise Refused(
                "auth_header", "auth_header must be 'Name: value', e.g. 'Authorization: Bearer …'"
            ) from None


def _salesforce(credentials: Mapping[str, str]) -> None:
    if credentials.get("username") and not credentials.get("password"):
        raise Refused("password", "password required with username (the username-password flow)")
    for companion in ("password", "security_token"):
        if credentials.get(companion) and not credentials.get("username"):
            raise Refused(
                "username", f"username required with {companion} (the username-password flow)"
            )
    for field, sobject, fields in (
        ("sobject", credentials.get("sobject", ""), "Id"),
        ("fields", "Contact", credentials.get("fields", "")),
    ):
        try:
            soql(sobject, fields)
        except Unusable as bad:
            raise Refused(field, f"{field}: {str(bad).removeprefix('Salesforce: ')}") from None


def _shopify(credentials: Mapping[str, str]) -> None:
    domain = (credentials.get("shop_domain") or "").strip()
    if domain and "://" not in domain and not SHOPIFY_DOMAIN.match(domain):
        raise Refused("shop_domain", "shop_domain must be a domain, e.g. example.myshopify.com")
    if not re.match(SHOPIFY_VERSION_PATTERN, credentials.get("api_version", "")):
        raise Refused("api_version", "api_version must look like 2025-07")
    if credentials.get("resource") not in SHOPIFY_FIELDS:
        raise Refused("resource", f"resource must be one of {', '.join(SHOPIFY_FIELDS)}")


def _google_sheets(credentials: Mapping[str, str]) -> None:
    key_file = credentials.get("service_account_json")
    if key_file:
        try:
            service_account(key_file)
        except Unusable as bad:  # its reason never quotes the key
            raise Refused(
                "service_account_json", str(bad).removeprefix("Google Sheets: ")
            ) from None
    sheet = (credentials.get("sheet_id") or "").strip()
    if sheet and "/" in sheet:
        raise Refused("sheet_id", "sheet_id must be the id from the sheet's URL, not the URL")


def _stripe(credentials: Mapping[str, str]) -> None:
    if credentials.get("resource") not in STRIPE_RESOURCES:
        raise Refused("resource", f"resource must be one of {', '.join(STRIPE_RESOURCES)}")


_KIND_RULES: dict[str, Callable[[Mapping[str, str]], None]] = {
    "mysql": _database("mysql"),
    "postgresql": _database("postgresql"),
    "mongodb": _mongodb,
    "rest_api": _rest_api,
    "salesforce": _salesforce,
    "shopify": _shopify,
    "google_sheets": _google_sheets,
    "stripe": _stripe,
}
