"""What the HTTP data sources' responses mean: the records and the next page out of one
page, the vendor's error body as a short reason with no credential in it, which failures
are waited out and tried again, and which next-page URLs may be followed.

Pure, so every vendor's shapes are tested without a server; the connectors in
``ragio.integrations.connectors`` only send the requests these functions describe. A
response that cannot be used raises ``Unusable`` with the reason the owner is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

import attrs

from ragcore.retry import Outcome, RetryPolicy, next_delay

Record = dict[str, Any]
MAX_REASON_CHARS = 300
#: 429 and 503 are waited out (Retry-After when the source sends one, within 30 s) and
#: tried again, at most three times; every other failure is reported at once: a wrong
#: key, a missing sheet or a bad query fail the same way on every try
SOURCE_RETRY = RetryPolicy(
    max_retries=3,
    backoff_seconds=1.0,
    max_retry_after_seconds=30.0,
    retried_statuses=frozenset({429, 503}),
)
WAITED_STATUSES = frozenset({429, 503})


class Unusable(Exception):
    """The source answered with something that is not a page (or refused); ``reason`` is
    what the owner is shown."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@attrs.frozen
class Page:
    """One page's records; ``next``: the cursor, token or URL of the next page (None: the
    last page)."""

    records: list[Record]
    next: str | None = None


@attrs.frozen
class Throttled:
    """The source asked to wait ``seconds`` and send the same request again."""

    seconds: float


# ---------------------------------------------------------------- retries and secrets


def retry_wait(
    attempts: int, status: int, retry_after: str | None, date: str | None
) -> float | None:
    """Seconds to wait before trying again after ``attempts`` attempts, the last answered
    with ``status`` (429 and 503 only); None: give up. A Retry-After given as a date is
    counted from the response's own ``Date`` header, so no clock of ours is read."""
    if status not in WAITED_STATUSES:
        return None
    return next_delay(
        SOURCE_RETRY, attempts, Outcome(status, retry_after=retry_after), _http_date(date)
    )


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None


_CREDENTIAL_LOOKING = re.compile(
    r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{6,}"  # Stripe keys
    r"|\bshp(?:at|ca|pa|ss)_[A-Fa-f0-9]{6,}"  # Shopify tokens
    r"|\bpat-[a-z]{2,3}[0-9]-[A-Za-z0-9-]{8,}"  # HubSpot private-app tokens
    r"|\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"  # a JWT
    r"|\bBearer\s+\S{6,}",
)


def masked(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every ``secret`` (at least 4 characters) and anything shaped like an
    API key, a token or a JWT replaced by ``****``: a reason is stored and shown."""
    for secret in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, "****")
    return _CREDENTIAL_LOOKING.sub("****", text)


def reason(
    vendor: str, status: int | None, message: str | None, secrets: Iterable[str] = ()
) -> str:
    """``"<vendor>: HTTP <status>: <message>"``, masked and cut short."""
    text = " ".join((message or "no details").split())
    head = f"{vendor}: HTTP {status}: " if status is not None else f"{vendor}: "
    text = masked(head + text, secrets)
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


# ---------------------------------------------------------------- next-page URLs


def same_origin(base: str, url: str, vendor: str) -> str:
    """``url`` (absolute, or relative to ``base``) as an absolute URL on ``base``'s scheme,
    host and port; ``Unusable`` otherwise: a next-page link elsewhere would send the
    credentials to whoever the source (or whoever answers for it) names."""
    resolved = urljoin(base + "/", url) if not urlsplit(url).scheme else url
    want, got = urlsplit(base), urlsplit(resolved)
    if (got.scheme, got.hostname, got.port) != (want.scheme, want.hostname, want.port):
        raise Unusable(
            f"{vendor}: the next page is on another origin ({got.scheme}://{got.netloc}); refused"
        )
    return resolved


_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


def link_next(header: str | None) -> str | None:
    """The ``rel="next"`` target of a ``Link`` header (RFC 8288), if any."""
    if not header:
        return None
    for match in _LINK.finditer(header):
        for param in match.group(2).split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "rel" and "next" in value.strip().strip('"').split():
                return match.group(1).strip()
    return None


# ---------------------------------------------------------------- HubSpot


def hubspot_page(body: Any) -> Page:
    """CRM v3 list: ``{"results": [...], "paging": {"next": {"after": "…"}}}``."""
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise Unusable("HubSpot: the answer has no results list")
    after = ((body.get("paging") or {}).get("next") or {}).get("after")
    return Page(_dicts(body["results"]), str(after) if after not in (None, "") else None)


def hubspot_error(body: Any) -> str | None:
    """``{"status": "error", "message": "…", "category": "…"}``."""
    return _text(body.get("message")) if isinstance(body, dict) else None


# ---------------------------------------------------------------- Salesforce

SALESFORCE_API = "v62.0"
_SOQL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*$")


def soql(sobject: str, fields: str, limit: int | None = None) -> str:
    """``SELECT <fields> FROM <sobject>``, every name checked (no SOQL injection)."""
    names = [name.strip() for name in fields.split(",") if name.strip()]
    if not names:
        raise Unusable("Salesforce: fields names no field")
    for name in [sobject.strip(), *names]:
        if not _SOQL_NAME.match(name):
            raise Unusable(f"Salesforce: {name!r} is not a field or object name")
    query = f"SELECT {', '.join(names)} FROM {sobject.strip()}"
    return f"{query} LIMIT {limit}" if limit is not None else query


def salesforce_token_form(credentials: Mapping[str, str]) -> dict[str, str]:
    """The OAuth 2.0 token request: the client credentials flow (Salesforce's
    recommendation) without a username, else the username-password flow, whose password
    is the user's password followed by the security token."""
    form = {
        "client_id": credentials.get("client_id", ""),
        "client_secret": credentials.get("client_secret", ""),
    }
    if not credentials.get("username"):
        return {"grant_type": "client_credentials", **form}
    password = credentials.get("password", "") + credentials.get("security_token", "")
    return {
        "grant_type": "password",
        **form,
        "username": credentials["username"],
        "password": password,
    }


@attrs.frozen
class SalesforceSession:
    access_token: str
    instance_url: str


def salesforce_session(body: Any) -> SalesforceSession:
    if (
        not isinstance(body, dict)
        or not _text(body.get("access_token"))
        or not _text(body.get("instance_url"))
    ):
        raise Unusable("Salesforce: the token answer has no access_token and instance_url")
    return SalesforceSession(body["access_token"], body["instance_url"])


def salesforce_page(body: Any) -> Page:
    """``{"done": bool, "nextRecordsUrl": "/services/data/…", "records": [...]}``; each
    record without its ``attributes`` (type and URL)."""
    if not isinstance(body, dict) or not isinstance(body.get("records"), list):
        raise Unusable("Salesforce: the answer has no records list")
    records = [
        {k: v for k, v in record.items() if k != "attributes"} for record in _dicts(body["records"])
    ]
    following = None if body.get("done", True) else _text(body.get("nextRecordsUrl"))
    return Page(records, following)


def salesforce_error(body: Any) -> str | None:
    """Token errors ``{"error", "error_description"}``; REST errors
    ``[{"message", "errorCode"}]``."""
    if isinstance(body, dict):
        description, code = _text(body.get("error_description")), _text(body.get("error"))
        if description:
            return f"{description} ({code})" if code else description
        return code
    if isinstance(body, list) and body and isinstance(body[0], dict):
        message, code = _text(body[0].get("message")), _text(body[0].get("errorCode"))
        if message:
            return f"{code}: {message}" if code else message
    return None


# ---------------------------------------------------------------- Shopify

SHOPIFY_FIELDS = {
    "customers": "id email firstName lastName phone tags numberOfOrders createdAt updatedAt",
    "orders": (
        "id name email phone createdAt updatedAt displayFinancialStatus "
        "displayFulfillmentStatus totalPriceSet { shopMoney { amount currencyCode } } "
        "customer { id email }"
    ),
}


def shopify_query(resource: str) -> str:
    """The GraphQL Admin API query of one page of ``resource`` (customers or orders)."""
    if resource not in SHOPIFY_FIELDS:
        raise Unusable(f"Shopify: resource must be one of {', '.join(SHOPIFY_FIELDS)}")
    return (
        f"query Page($first: Int!, $after: String) {{ {resource}(first: $first, after: $after) "
        f"{{ nodes {{ {SHOPIFY_FIELDS[resource]} }} pageInfo {{ hasNextPage endCursor }} }} }}"
    )


def shopify_page(body: Any, resource: str) -> Page | Throttled:
    """``{"data": {resource: {"nodes", "pageInfo"}}}``; GraphQL ``errors`` (HTTP 200) as
    the reason, except ``THROTTLED``: wait until the bucket holds the query's cost."""
    if not isinstance(body, dict):
        raise Unusable("Shopify: the answer is not a GraphQL response")
    errors = body.get("errors")
    if errors:
        if isinstance(errors, list) and any(_code(e) == "THROTTLED" for e in errors):
            return Throttled(_shopify_wait(body.get("extensions")))
        raise Unusable(f"Shopify: {shopify_error(body) or 'the query failed'}")
    connection = (body.get("data") or {}).get(resource)
    if not isinstance(connection, dict) or not isinstance(connection.get("nodes"), list):
        raise Unusable(f"Shopify: the answer has no {resource}")
    info = connection.get("pageInfo") or {}
    cursor = _text(info.get("endCursor")) if info.get("hasNextPage") else None
    return Page(_dicts(connection["nodes"]), cursor)


def shopify_error(body: Any) -> str | None:
    """``{"errors": "[API] Invalid API key or access token …"}`` (HTTP errors) or
    ``{"errors": [{"message": …}]}`` (GraphQL errors)."""
    if not isinstance(body, dict):
        return None
    errors = body.get("errors")
    if isinstance(errors, str):
        return _text(errors)
    if isinstance(errors, list):
        messages = [e.get("message") for e in errors if isinstance(e, dict)]
        return "; ".join(m for m in messages if isinstance(m, str)) or None
    if isinstance(errors, dict):
        return "; ".join(f"{k}: {v}" for k, v in errors.items()) or None
    return None


def _code(error: Any) -> Any:
    return (error.get("extensions") or {}).get("code") if isinstance(error, dict) else None


def _shopify_wait(extensions: Any) -> float:
    """Seconds until the leaky bucket holds the requested cost (1 s when unsaid)."""
    cost = (extensions or {}).get("cost") or {}
    status = cost.get("throttleStatus") or {}
    try:
        needed = float(cost["requestedQueryCost"]) - float(status["currentlyAvailable"])
        return max(0.0, min(needed / float(status["restoreRate"]), 30.0))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return 1.0


# ---------------------------------------------------------------- Google Sheets


def sheet_records(values: Any) -> list[Record]:
    """``values`` (rows of cells, ``majorDimension`` ROWS): the first row names the
    columns, each further row is a record; a row shorter than the header (the API drops
    trailing empty cells) fills the rest with ""; blank column names get ``column_<n>``;
    wholly empty rows are skipped."""
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(row, list) for row in values):
        raise Unusable("Google Sheets: the answer's values are not rows")
    if not values:
        return []
    header = [str(c).strip() or f"column_{n + 1}" for n, c in enumerate(values[0])]
    records = []
    for row in values[1:]:
        if not any(str(cell).strip() for cell in row):
            continue
        width = max(len(header), len(row))
        names = header + [f"column_{n + 1}" for n in range(len(header), width)]
        cells = list(row) + [""] * (width - len(row))
        records.append(dict(zip(names, cells, strict=True)))
    return records


def sheet_values(body: Any) -> Any:
    if not isinstance(body, dict):
        raise Unusable("Google Sheets: the answer is not a value range")
    return body.get("values")


def first_sheet(body: Any) -> str:
    """The first sheet's title from ``spreadsheets.get`` (``fields=sheets.properties.title``)."""
    try:
        title = body["sheets"][0]["properties"]["title"]
    except (KeyError, IndexError, TypeError):
        raise Unusable("Google Sheets: the spreadsheet has no sheets") from None
    if not isinstance(title, str):
        raise Unusable("Google Sheets: the spreadsheet has no sheets")
    return title


def quoted_sheet(title: str) -> str:
    """A sheet title as A1 notation quotes it: ``'Q1 ''24'``."""
    return "'" + title.replace("'", "''") + "'"


_A1 = re.compile(
    r"^(?P<sheet>.*!)?(?P<c1>[A-Za-z]{1,3})(?P<r1>[0-9]*)(?::(?P<c2>[A-Za-z]{1,3})(?P<r2>[0-9]*))?$"
)


def header_range(range_: str) -> str:
    """The range's first row and one below it (the smallest read that says the sheet
    and its columns are there): ``Sheet1!A1:D100`` -> ``Sheet1!A1:D2``. A sheet name alone
    (or a named range) reads its first two rows."""
    match = _A1.match(range_.strip())
    if not match:
        sheet = range_.strip()
        return f"{sheet}!1:2" if "!" not in sheet else sheet
    sheet = match.group("sheet") or ""
    first = int(match.group("r1") or 1)
    c2 = match.group("c2") or match.group("c1")
    return f"{sheet}{match.group('c1')}{first}:{c2}{first + 1}"


def google_error(body: Any) -> str | None:
    """API errors ``{"error": {"code", "message", "status"}}``; OAuth token errors
    ``{"error": "invalid_grant", "error_description": "…"}``."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        message, status = _text(error.get("message")), _text(error.get("status"))
        if message:
            return f"{message} ({status})" if status else message
        return status
    if isinstance(error, str):
        description = _text(body.get("error_description"))
        return f"{description} ({error})" if description else error
    return None


def access_token(body: Any, vendor: str) -> str:
    """The ``access_token`` of an OAuth 2.0 token response."""
    token = body.get("access_token") if isinstance(body, dict) else None
    if not _text(token):
        raise Unusable(f"{vendor}: the token answer has no access_token")
    return str(token)


# ---------------------------------------------------------------- Stripe


def stripe_page(body: Any) -> Page:
    """``{"object": "list", "data": [...], "has_more": bool}``; the next page starts after
    the last object's id."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise Unusable("Stripe: the answer is not a list object")
    records = _dicts(body["data"])
    following = None
    if body.get("has_more") and records:
        following = _text(records[-1].get("id"))
    return Page(records, following)


def stripe_error(body: Any) -> str | None:
    """``{"error": {"type", "code", "message", "param"}}``."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    return _text(error.get("message")) or _text(error.get("type"))


# ---------------------------------------------------------------- any JSON API

RECORD_KEYS = ("data", "results", "items", "records")
NEXT_CURSOR_KEYS = ("next_cursor", "nextCursor", "cursor")


@attrs.frozen
class RestPage:
    """A generic page: its records, the next page's URL (from the Link header or a
    ``next`` URL in the body), or a cursor to send back as ``?cursor=``."""

    records: list[Record]
    next_url: str | None = None
    cursor: str | None = None


def rest_page(body: Any, records_key: str | None, link: str | None) -> RestPage:
    """The records: the body when it is a list, else its ``records_key`` field (dotted
    for nesting: ``result.items``), else the first of data, results, items, records that
    is a list. The next page, first found: a ``Link: <…>; rel="next"`` header; a ``next``
    URL in the body (top level, or in ``links``/``paging``); a ``next_cursor``
    (``nextCursor``, ``cursor``) field, sent back as the ``cursor`` query parameter."""
    records = _rest_records(body, records_key)
    following = link_next(link)
    if following:
        return RestPage(records, next_url=following)
    if isinstance(body, dict):
        for holder in (body, body.get("links"), body.get("paging")):
            if isinstance(holder, dict) and _text(holder.get("next")):
                return RestPage(records, next_url=holder["next"])
        for key in NEXT_CURSOR_KEYS:
            value = body.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return RestPage(records, cursor=str(value))
    return RestPage(records)


def _rest_records(body: Any, records_key: str | None) -> list[Record]:
    if isinstance(body, list):
        return _dicts(body)
    if not isinstance(body, dict):
        raise Unusable("REST API: the answer is neither a list nor an object")
    if records_key:
        value: Any = body
        for part in records_key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, list):
            raise Unusable(f"REST API: the answer has no list in {records_key!r}")
        return _dicts(value)
    for key in RECORD_KEYS:
        if isinstance(body.get(key), list):
            return _dicts(body[key])
    raise Unusable(
        "REST API: the answer has no list of records (set records_key to the field holding it)"
    )


def rest_error(body: Any) -> str | None:
    """The usual error fields: ``message``, ``error`` (text, or an object with a
    ``message``), ``detail``, ``title``, ``error_description``."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        return _text(error.get("message"))
    for key in ("message", "error_description", "detail", "title"):
        if _text(body.get(key)):
            return str(body[key])
    return _text(error)


def auth_header(value: str) -> tuple[str, str]:
    """``"Name: value"`` as a header pair; ``Unusable`` when it is not one."""
    name, sep, content = value.partition(":")
    name = name.strip()
    if not sep or not name or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
        raise Unusable("REST API: auth_header must be 'Name: value'")
    return name, content.strip()


def _dicts(items: Sequence[Any]) -> list[Record]:
    """Each item a record: objects as they are, anything else as ``{"value": item}``."""
    return [item if isinstance(item, dict) else {"value": item} for item in items]
