"""A site: one website the widget may run on, as the owner sets it (``/widget/sites``).

Its public id is what the page names (``data-site``): not a secret, since anyone can read
the page. What keeps another website from using it is the list of allowed origins
(checked on every visitor request a browser sends), and what keeps a script outside a
browser (which can send any ``Origin``) from spending the owner's tokens are the quotas
per visitor, per IP address and per site (``ragcore.widget.quotas``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import attrs

from ragcore.converter import listing, structure_body, unless_sent
from ragcore.employees.roles import _IDENTIFIER, IDENTIFIER_RULE
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import HOST, SPACE, STORABLE, blank_or, number_pattern, whole_number
from ragcore.schema import described, text

MAX_NAME_CHARS = 100
MAX_GREETING_CHARS = 500
MAX_ORIGINS = 20
MAX_ORIGIN_CHARS = 255
#: what ``public_id`` looks like: the prefix, then 16 of these (made by the runner)
PUBLIC_ID_PREFIX = "site_"
PUBLIC_ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
PUBLIC_ID_PATTERN = re.compile(r"site_[a-z0-9]{16}")
#: hosts an ``http://`` origin may name: a page served on this machine, for testing
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
COLOUR = re.compile(r"#[0-9a-fA-F]{6}")
_PORT = number_pattern(0, 65535)
_LOOPBACK = "(?:[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]|127\\.0\\.0\\.1|\\[::1\\])"
#: an origin a site may allow, as a pattern: https with a host, or http on a loopback
#: host; an optional port and a trailing slash; spaces around it dropped
ORIGIN_PATTERN = (
    f"^[{SPACE}]*(?:[Hh][Tt][Tt][Pp][Ss]://{HOST}|[Hh][Tt][Tt][Pp]://{_LOOPBACK})"
    f"(?::{_PORT})?/?[{SPACE}]*$"
)
ORIGIN = re.compile(ORIGIN_PATTERN)
#: a role's identifier, or blank for none
ROLE_PATTERN = blank_or(_IDENTIFIER.pattern)
Position = Literal["right", "left"]
#: the quotas' bounds: a question quota of 0 would refuse everything (disable the site)
MAX_QUESTIONS = 1_000_000
MAX_TOKENS = 10_000_000_000

READ_ONLY_FIELDS = ("id", "public_id", "created_at", "updated_at", "identity_secret")
REQUIRED = ("name",)


@attrs.frozen
class Site:
    id: int
    public_id: Annotated[str, described("what the page's data-site names; not a secret")]
    name: str
    allowed_origins: Annotated[
        list[str], described("the exact origins the widget may run on; empty: none")
    ]
    role: Annotated[str | None, described("the employee that answers; null: no role")]
    greeting: str
    colour: str
    position: Position
    visitor_questions_per_day: int
    ip_questions_per_hour: int
    ip_questions_per_day: int
    tokens_per_day: Annotated[int, described("0: no site limit (budgets still apply)")]
    enabled: bool
    created_at: datetime | None = None
    updated_at: datetime | None = None


def check_name(value: Any) -> str:
    return check_text(value, "name", MAX_NAME_CHARS)


def check_origin(value: Any) -> str:
    """An exact origin (``ORIGIN_PATTERN``), normalised (``https://shop.example.com``, a
    port only when not the scheme's own): https, or http on a loopback host (a page
    served on this machine); no path, query, fragment or user."""
    field = "allowed_origins"
    if not isinstance(value, str) or len(value) > MAX_ORIGIN_CHARS:
        raise InvalidInput(
            field, f"each must be an origin such as https://shop.example.com, at most "
            f"{MAX_ORIGIN_CHARS} characters"
        )  # fmt: skip
    if not ORIGIN.fullmatch(value):
        raise InvalidInput(
            field,
            f"{value[:80]!r} is not an origin a website may have: https://host[:port] (the "
            "origin a browser sends), or http:// only for localhost, 127.0.0.1 and [::1]",
        )
    parts = urlsplit(value.strip())
    scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    shown_host = f"[{host}]" if ":" in host else host
    default_port = 443 if scheme == "https" else 80
    suffix = f":{port}" if port is not None and port != default_port else ""
    return f"{scheme}://{shown_host}{suffix}"


def check_origins(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise InvalidInput("allowed_origins", "must be a list of origins")
    if len(value) > MAX_ORIGINS:
        raise InvalidInput("allowed_origins", f"at most {MAX_ORIGINS} origins")
    return tuple(dict.fromkeys(check_origin(item) for item in value))


def check_role(value: Any) -> str:
    """A role's identifier, or "" for none."""
    if not isinstance(value, str) or not re.fullmatch(ROLE_PATTERN, value):
        raise InvalidInput(
            "role", f'must be a role\'s identifier ({IDENTIFIER_RULE}), or "" for none'
        )
    return value


def check_greeting(value: Any) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidInput("greeting", "must be text")
    if len(value) > MAX_GREETING_CHARS:
        raise InvalidInput("greeting", f"is longer than {MAX_GREETING_CHARS} characters")
    return value.strip()


def check_colour(value: Any) -> str:
    if not isinstance(value, str) or not COLOUR.fullmatch(value):
        raise InvalidInput("colour", "must be a colour as #rrggbb, such as #2563eb")
    return value.lower()


def _quota(field: str, minimum: int, maximum: int) -> Any:
    def check(value: Any) -> int:
        number = whole_number(value)
        if number is None:
            raise InvalidInput(field, "must be a whole number")
        if not minimum <= number <= maximum:
            raise InvalidInput(field, f"must be from {minimum} to {maximum}")
        return number

    return check


QUESTIONS = {"minimum": 1, "maximum": MAX_QUESTIONS}


@listing(read_only=READ_ONLY_FIELDS)
@attrs.frozen
class SitePatch:
    """The fields to change (a POST's fields, name required); {} changes nothing."""

    name: Annotated[str | None, text(MAX_NAME_CHARS)] = unless_sent(check_name)
    allowed_origins: Annotated[
        tuple[Annotated[str, described(maxLength=MAX_ORIGIN_CHARS, pattern=ORIGIN_PATTERN)], ...]
        | None,
        described(
            "exact origins: https://host[:port] (http only for localhost, 127.0.0.1, [::1])",
            maxItems=MAX_ORIGINS,
        ),
    ] = unless_sent(check_origins)
    role: Annotated[
        str | None,
        described(
            "a customer-facing role's identifier (404 unknown; 409 when it does not answer "
            'on the web); "" for the default',
            pattern=ROLE_PATTERN,
        ),
    ] = unless_sent(check_role)
    greeting: Annotated[str | None, described(maxLength=MAX_GREETING_CHARS, pattern=STORABLE)] = (
        unless_sent(check_greeting)
    )
    colour: Annotated[str | None, described(pattern="^#[0-9a-fA-F]{6}$")] = unless_sent(
        check_colour
    )
    position: Position | None = unless_sent()
    visitor_questions_per_day: Annotated[int | None, described(**QUESTIONS)] = unless_sent(
        _quota("visitor_questions_per_day", 1, MAX_QUESTIONS)
    )
    ip_questions_per_hour: Annotated[int | None, described(**QUESTIONS)] = unless_sent(
        _quota("ip_questions_per_hour", 1, MAX_QUESTIONS)
    )
    ip_questions_per_day: Annotated[int | None, described(**QUESTIONS)] = unless_sent(
        _quota("ip_questions_per_day", 1, MAX_QUESTIONS)
    )
    tokens_per_day: Annotated[int | None, described(minimum=0, maximum=MAX_TOKENS)] = unless_sent(
        _quota("tokens_per_day", 0, MAX_TOKENS)
    )
    enabled: bool | None = unless_sent()

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


def check_patch(body: Mapping[str, Any]) -> SitePatch:
    """A PATCH body: known fields only (unknown and read-only ones refused by name)."""
    return structure_body(body, SitePatch)


def check_new(body: Mapping[str, Any]) -> SitePatch:
    """A POST body: ``name`` required, the rest as in a PATCH."""
    fields = check_patch(body)
    if fields.name is None:
        raise InvalidInput("name", "is required: the owner's name for the site")
    return fields
