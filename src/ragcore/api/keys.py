"""API keys beside SERVICE_API_KEY (``/keys``): what each scope opens, which scopes
every route needs (``ROUTE_SCOPES``, the one place a route's scope is declared; the
OpenAPI document shows it), the shapes of the routes, and the per-minute request window.

SERVICE_API_KEY stays the owner's key: it holds every scope. A key the owner makes holds
the scopes it was given: ``admin`` is everything, the owner's key's equal (keys
included); ``read`` is every GET of the owner's data; ``chat`` asks (/chat, /v1) and reads
the conversations asked with it, and no other; ``ingest`` adds, renames and deletes
documents and websites and follows their jobs. A key is shown once, when it is made,
and kept only as its SHA-256 (a key is 256 random bits: no slow hash is needed to keep
it from being guessed back).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import attrs

from ragcore.converter import listing, structure_body, unless_sent
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import whole_number
from ragcore.schema import described, text

Scope = Literal["admin", "read", "chat", "ingest"]
SCOPES: tuple[Scope, ...] = ("admin", "read", "chat", "ingest")
SCOPE_MEANINGS = {
    "admin": "everything, as SERVICE_API_KEY (keys included)",
    "read": "every GET of the owner's data (documents, conversations, usage, status…)",
    "chat": "POST /chat, /chat/stream and /v1, and the conversations asked with this key",
    "ingest": "add, rename and delete documents and websites, crawl, follow their jobs",
}
#: what a generated key begins with: recognisable in a leaked log or a secret scanner
KEY_PREFIX = "rck_"
#: the characters of a key shown in lists, to tell keys apart (never enough to use one)
SHOWN_CHARS = len(KEY_PREFIX) + 6
MAX_NAME_CHARS = 100
MAX_KEYS = 1000
MAX_REQUESTS_PER_MINUTE = 1_000_000
MAX_TOKENS_PER_DAY = 1_000_000_000
MAX_EXPIRY_DAYS = 3650
RATE_WINDOW = timedelta(minutes=1)
_KEY = re.compile(r"rck_[A-Za-z0-9_-]{43}")

ADMIN: tuple[Scope, ...] = ("admin",)
READ: tuple[Scope, ...] = ("read",)
CHAT: tuple[Scope, ...] = ("chat",)
INGEST: tuple[Scope, ...] = ("ingest",)
READ_OR_CHAT: tuple[Scope, ...] = ("read", "chat")
READ_OR_INGEST: tuple[Scope, ...] = ("read", "ingest")
#: the scopes that open each route (as its path is written in the OpenAPI document) besides
#: admin, which opens every one; a route with no entry here is admin's alone. Open routes
#: (``/health``, ``/webhook/*``, the widget's, the console's files) need no key at all.
ROUTE_SCOPES: Mapping[tuple[str, str], tuple[Scope, ...]] = {
    # asking
    ("POST", "/chat"): CHAT,
    ("POST", "/chat/stream"): CHAT,
    ("GET", "/v1/models"): CHAT,
    ("GET", "/v1/models/{model}"): CHAT,
    ("POST", "/v1/chat/completions"): CHAT,
    ("GET", "/employees"): READ_OR_CHAT,
    # conversations: a chat key sees those it asked, and rates their turns
    ("GET", "/conversations"): READ_OR_CHAT,
    ("GET", "/conversations/{id}"): READ_OR_CHAT,
    ("POST", "/conversations/{id}/turns/{turn}/feedback"): CHAT,
    ("GET", "/conversations/events"): READ,
    # documents and websites
    ("POST", "/documents"): INGEST,
    ("GET", "/documents"): READ_OR_INGEST,
    ("GET", "/documents/jobs/{id}"): READ_OR_INGEST,
    ("GET", "/documents/{id}"): READ_OR_INGEST,
    ("PATCH", "/documents/{id}"): INGEST,
    ("DELETE", "/documents/{id}"): INGEST,
    ("GET", "/jobs"): READ_OR_INGEST,
    ("GET", "/jobs/{id}"): READ_OR_INGEST,
    ("DELETE", "/jobs/{id}"): INGEST,
    ("GET", "/websites"): READ_OR_INGEST,
    ("POST", "/websites"): INGEST,
    ("GET", "/websites/{id}"): READ_OR_INGEST,
    ("PATCH", "/websites/{id}"): INGEST,
    ("DELETE", "/websites/{id}"): INGEST,
    ("POST", "/websites/{id}/crawl"): INGEST,
    ("GET", "/websites/{id}/pages"): READ_OR_INGEST,
    # reading the owner's data
    ("GET", "/employees/{role}"): READ,
    ("GET", "/employees/{role}/memory"): READ,
    ("GET", "/employees/{role}/context"): READ,
    ("GET", "/profile"): READ,
    ("GET", "/answers"): READ,
    ("GET", "/answers/{id}"): READ,
    ("GET", "/insights/gaps"): READ,
    ("GET", "/insights/top-questions"): READ,
    ("GET", "/graph/entities"): READ,
    ("GET", "/graph/entities/{id}"): READ,
    ("GET", "/usage"): READ,
    ("GET", "/status"): READ,
    ("GET", "/metrics"): READ,
    ("GET", "/openapi.json"): READ_OR_CHAT + INGEST,
    ("GET", "/voice/calls"): READ,
    ("GET", "/autonomy"): READ,
    ("GET", "/autonomy/pending"): READ,
    ("GET", "/autonomy/log"): READ,
    ("GET", "/actions/{id}"): READ,
    ("GET", "/integrations"): READ,
    ("GET", "/integrations/kinds"): READ,
    ("GET", "/integrations/{id}"): READ,
    ("GET", "/integrations/{id}/records"): READ,
    ("GET", "/live-actions"): READ,
    ("GET", "/live-actions/runs"): READ,
    ("GET", "/live-actions/{id}"): READ,
    ("GET", "/automation-workflows"): READ,
    ("GET", "/automation-workflows/{id}"): READ,
    ("GET", "/widget/sites"): READ,
    ("GET", "/widget/sites/{id}"): READ,
}


def scopes_of(method: str, path: str) -> tuple[Scope, ...]:
    """The scopes that open ``method path`` (the OpenAPI path): admin and its entry's."""
    return ("admin", *ROUTE_SCOPES.get((method.upper(), path), ()))


def refusal(method: str, path: str, held: Iterable[str]) -> str | None:
    """Why a key holding ``held`` may not call ``method path`` (the 403's detail), naming
    the scope it needs; None when it may."""
    needed = scopes_of(method, path)
    held = tuple(held)
    if any(scope in held for scope in needed):
        return None
    wanted = " or ".join(s for s in needed if s != "admin") or "admin"
    return (
        f"this API key's scopes ({', '.join(held) or 'none'}) do not open {method.upper()} "
        f"{path}: it needs the {wanted} scope"
    )


def only_own_conversations(held: Iterable[str]) -> bool:
    """Whether a key sees only the conversations asked with it: a chat key that cannot
    read the owner's data."""
    held = set(held)
    return "chat" in held and not held & {"admin", "read"}


def key_hash(key: str) -> str:
    """What is kept of a key: its SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def looks_like_key(given: str) -> bool:
    """Whether ``given`` has a generated key's form (``rck_`` and 43 base64url characters)."""
    return bool(_KEY.fullmatch(given))


def window_start(now: datetime) -> datetime:
    """The start of the minute holding ``now``: a key's requests are counted per minute."""
    return now.replace(second=0, microsecond=0)


def retry_after(now: datetime) -> int:
    """Whole seconds until the next minute's window opens (at least 1)."""
    left = (window_start(now) + RATE_WINDOW - now).total_seconds()
    return max(1, math.ceil(left))


def _name(value: Any) -> str:
    return check_text(value, "name", MAX_NAME_CHARS)


def _scopes(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise InvalidInput("scopes", f"must be a list of one or more of {', '.join(SCOPES)}")
    for scope in value:
        if scope not in SCOPES:
            shown = repr(scope[:40]) if isinstance(scope, str) else "each scope"
            raise InvalidInput("scopes", f"{shown} is none of {', '.join(SCOPES)}")
    if len(set(value)) < len(value):
        raise InvalidInput("scopes", "names a scope twice: name each once")
    return tuple(s for s in SCOPES if s in value)


def _limit(field: str, maximum: int) -> Any:
    def check(value: Any) -> int:
        number = whole_number(value)
        if number is None or not 0 <= number <= maximum:
            raise InvalidInput(field, f"must be a whole number from 0 (no limit) to {maximum}")
        return number

    return check


def _moment(value: Any) -> datetime:
    if isinstance(value, datetime):  # as the converter read it
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        raise InvalidInput("expires_at", "must be an RFC 3339 date-time, such as 2027-01-31T00:00Z")
    try:
        moment = datetime.fromisoformat(value.upper())  # RFC 3339 allows "t" and "z"
    except ValueError:
        raise InvalidInput("expires_at", "must be an RFC 3339 date-time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _days(value: Any) -> int:
    number = whole_number(value)
    if number is None or not 1 <= number <= MAX_EXPIRY_DAYS:
        raise InvalidInput("expires_in_days", f"must be a whole number from 1 to {MAX_EXPIRY_DAYS}")
    return number


_SCOPE_ITEM = Annotated[str, described(enum=list(SCOPES))]


@listing(read_only=("id", "key", "shown", "created_at", "last_used_at", "revoked_at"))
@attrs.frozen
class KeyPatch:
    """The fields to change; {} changes nothing."""

    name: Annotated[str | None, text(MAX_NAME_CHARS, "the owner's name for the key")] = unless_sent(
        _name
    )
    scopes: Annotated[
        tuple[_SCOPE_ITEM, ...] | None,
        described(
            "what the key opens: "
            + "; ".join(f"{scope}: {meaning}" for scope, meaning in SCOPE_MEANINGS.items()),
            minItems=1,
            uniqueItems=True,
        ),
    ] = unless_sent(_scopes)
    requests_per_minute: Annotated[
        int | None,
        described(
            "the most requests a calendar minute (across every replica); over it, 429 with "
            "Retry-After; 0: no limit",
            minimum=0,
            maximum=MAX_REQUESTS_PER_MINUTE,
        ),
    ] = unless_sent(_limit("requests_per_minute", MAX_REQUESTS_PER_MINUTE))
    tokens_per_day: Annotated[
        int | None,
        described(
            "the most model tokens the key's questions use a UTC day; over it, the usage-limit "
            "answer without asking the provider; 0: no limit",
            minimum=0,
            maximum=MAX_TOKENS_PER_DAY,
        ),
    ] = unless_sent(_limit("tokens_per_day", MAX_TOKENS_PER_DAY))
    expires_in_days: Annotated[
        int | None,
        described(
            "the key stops working this many days from now", minimum=1, maximum=MAX_EXPIRY_DAYS
        ),
    ] = unless_sent(_days)
    expires_at: Annotated[
        datetime | None,
        described(
            "the moment the key stops working (RFC 3339; UTC when it names no offset): "
            f"later than now and within {MAX_EXPIRY_DAYS} days of it; not with "
            "expires_in_days"
        ),
    ] = unless_sent(_moment, refused="must be an RFC 3339 date-time, such as 2027-01-31T00:00Z")


@listing(read_only=("id", "key", "shown", "created_at", "last_used_at", "revoked_at"))
@attrs.frozen
class NewKey(KeyPatch):
    """A POST's body: a PATCH's fields, ``name`` and ``scopes`` required."""

    name: Annotated[str, text(MAX_NAME_CHARS, "the owner's name for the key")] = attrs.field(
        kw_only=True
    )
    scopes: Annotated[
        tuple[_SCOPE_ITEM, ...],
        described("what the key opens (see PATCH)", minItems=1, uniqueItems=True),
    ] = attrs.field(kw_only=True)


def check_patch(body: Mapping[str, Any]) -> KeyPatch:
    return structure_body(body, KeyPatch)


def check_new(body: Mapping[str, Any]) -> KeyPatch:
    """A POST body: known fields only, ``name`` and ``scopes`` required."""
    fields = check_patch(body)
    if fields.name is None:
        raise InvalidInput("name", "is required: the owner's name for the key, such as website")
    if fields.scopes is None:
        raise InvalidInput("scopes", f"is required: one or more of {', '.join(SCOPES)}")
    return fields


def expiry(now: datetime, fields: KeyPatch) -> datetime | None:
    """When the key stops working, as ``fields`` say (None: they say nothing of it): a
    moment later than ``now`` and at most MAX_EXPIRY_DAYS away."""
    if fields.expires_in_days is not None and fields.expires_at is not None:
        raise InvalidInput("expires_at", "send expires_at or expires_in_days, not both")
    if fields.expires_in_days is not None:
        return now + timedelta(days=fields.expires_in_days)
    if fields.expires_at is None:
        return None
    if fields.expires_at <= now:
        raise InvalidInput("expires_at", f"must be later than now ({now.isoformat()})")
    if fields.expires_at > now + timedelta(days=MAX_EXPIRY_DAYS):
        raise InvalidInput("expires_at", f"must be within {MAX_EXPIRY_DAYS} days from now")
    return fields.expires_at


@attrs.frozen
class KeyUsage:
    """What a key did: requests this minute's window counted, model tokens today and this
    month (UTC, settled)."""

    tokens_today: int = 0
    tokens_this_month: int = 0


@attrs.frozen
class ApiKey:
    """A key as listed: never the key itself, only its first characters (``shown``)."""

    id: int
    name: str
    shown: Annotated[str, described("the key's first characters, to tell keys apart")]
    scopes: tuple[_SCOPE_ITEM, ...]
    requests_per_minute: Annotated[int, described("0: no limit")]
    tokens_per_day: Annotated[int, described("0: no limit")]
    created_at: datetime
    expires_at: Annotated[datetime | None, described("null: never")]
    revoked_at: Annotated[datetime | None, described("null: not revoked")]
    last_used_at: Annotated[datetime | None, described("null: never used")]
    usage: KeyUsage = KeyUsage()


@attrs.frozen
class KeyCreated(ApiKey):
    key: Annotated[
        str, described("the key: shown only now (it is kept only as a hash); send it as X-API-Key")
    ] = ""


@attrs.frozen
class Keys:
    keys: list[ApiKey]
