"""A workflow's definition: the rules for ``POST``/``PATCH /automation-workflows`` bodies
and the ``GET`` filters, and the workflow as the API shows it.

Only the customer channels can trigger a workflow: the three wired text channels and
the website's chat widget (``web``). Voice is not wired (SPEC section 6 rule 3), and
``api``, ``slack`` and ``email``, which roles also list, are not channels that call
workflows: a workflow naming one of them would never fire, so it is refused with a
message that says so rather than stored to stay silent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import attrs

from ragcore.channel_names import CUSTOMER_CHANNELS
from ragcore.converter import listing, structure_body, unless_sent
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import http_url_pattern
from ragcore.schema import described, text
from ragcore.settings import Settings
from ragcore.targets.addresses import Reach, own_networks

#: the channels workflows follow
WIRED_CHANNELS = CUSTOMER_CHANNELS
Channel = Literal[WIRED_CHANNELS]  # type: ignore[valid-type]
_FIRING = ", ".join(WIRED_CHANNELS[:-1]) + " and " + WIRED_CHANNELS[-1]
#: channel identifiers roles use that never call workflows, and why
UNWIRED_CHANNELS = {
    "voice": "the voice channel is not wired to workflows: calls never fire them",
    "api": "replies through the HTTP API (POST /chat) do not fire workflows",
    "slack": f"slack is not a wired channel: only {_FIRING} fire workflows",
    "email": f"email is not a wired channel: only {_FIRING} fire workflows",
}
REQUIRED = ("name", "webhook_url", "channels")
READ_ONLY_FIELDS = ("id", "created_at", "updated_at")
FILTERS = ("channel", "is_active")
MAX_NAME_CHARS = 200
MAX_URL_CHARS = 2048
URL_REFUSAL = "must be text: an http:// or https:// URL"
#: ``check_webhook_url``'s URL as a pattern (it takes an IPv6 address in brackets and an
#: internationalised name too)
URL_PATTERN = http_url_pattern()
CHANNELS_REFUSAL = f"must be a list of {', '.join(WIRED_CHANNELS)}"
TARGET = (
    "http:// or https://, with a host and no user:password; never a metadata, link-local or "
    "unspecified address, nor the service itself; loopback and private addresses only with "
    "WORKFLOW_ALLOW_PRIVATE_TARGETS=true (422 otherwise)"
)
#: the schemas of webhook_url and channels
URL = {"description": TARGET, "maxLength": MAX_URL_CHARS, "pattern": URL_PATTERN}
CHANNELS = {"items": {"enum": list(WIRED_CHANNELS)}, "minItems": 1}


@attrs.frozen
class Workflow:
    """A stored workflow, as the API shows it."""

    id: int
    name: str
    webhook_url: Annotated[str, described("as saved: the URL sent, without spaces around it")]
    channels: tuple[Channel, ...] = attrs.field(converter=tuple)
    is_active: bool = True
    created_at: datetime | None = None
    updated_at: datetime | None = None


@listing(read_only=READ_ONLY_FIELDS)
@attrs.frozen
class WorkflowPatch:
    """The fields to change, as in NewWorkflow; {} changes nothing."""

    name: Annotated[str | None, text(MAX_NAME_CHARS)] = unless_sent(lambda value: check_name(value))
    webhook_url: Annotated[str | None, described(**URL)] = unless_sent(
        lambda value: check_webhook_url(value), URL_REFUSAL
    )
    channels: Annotated[tuple[Any, ...] | None, described(**CHANNELS)] = unless_sent(
        lambda value: check_workflow_channels(value), CHANNELS_REFUSAL
    )
    is_active: bool | None = unless_sent()

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


@attrs.frozen
class Filters:
    """``GET /automation-workflows`` filters; ``None``: not filtered on."""

    channel: str | None = None
    is_active: bool | None = None


def check_new(body: Mapping[str, Any]) -> WorkflowPatch:
    """A POST body: name, webhook_url and channels required; is_active defaults to true."""
    fields = check_patch(body)
    missing = [name for name in REQUIRED if getattr(fields, name) is None]
    if missing:
        raise InvalidInput(", ".join(missing), f"{' and '.join(missing)} required")
    return fields if fields.is_active is not None else attrs.evolve(fields, is_active=True)


def check_patch(body: Mapping[str, Any]) -> WorkflowPatch:
    """A PATCH body: known fields only (unknown and read-only ones are refused by name,
    never ignored), each valid. ``{}`` is a valid PATCH that changes nothing."""
    return structure_body(body, WorkflowPatch)


def apply_patch(existing: Workflow, patch: WorkflowPatch) -> Workflow:
    return attrs.evolve(existing, **patch.given())


def check_name(value: Any) -> str:
    return check_text(value, "name", MAX_NAME_CHARS)


def check_webhook_url(value: object) -> str:
    """An absolute http(s) URL with a host and no user:password part: the call carries no
    credentials (SPEC section 5 item 9), and an HTTP client would turn them into a Basic
    authorization header."""
    if not isinstance(value, str):
        raise InvalidInput("webhook_url", URL_REFUSAL)
    if len(value) > MAX_URL_CHARS:
        raise InvalidInput("webhook_url", f"is longer than {MAX_URL_CHARS} characters")
    value = value.strip()
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInput("webhook_url", "must not contain spaces or control characters")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        raise InvalidInput("webhook_url", f"{value!r} is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidInput(
            "webhook_url", f"must be an http:// or https:// URL, got {value[:100]!r}"
        )
    if not parts.hostname:
        raise InvalidInput("webhook_url", "has no host; e.g. https://hooks.example.com/ragchat")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(
            "webhook_url",
            "must not contain user:password@: workflow calls send no credentials; use a "
            "secret path or query, or set WORKFLOW_SIGNING_SECRET and check the signature",
        )
    return value


def workflow_reach(settings: Settings, interfaces: Iterable[str] = ()) -> Reach:
    """Where workflow calls may connect: http or https, public addresses, and loopback and
    private ones too when WORKFLOW_ALLOW_PRIVATE_TARGETS is on (a workflow engine on this
    host or LAN); never a link-local or metadata address, nor the service itself.
    ``interfaces``: the host's addresses, when APP_BIND is every interface."""
    return Reach(
        calls="workflow calls",
        setting="WORKFLOW_ALLOW_PRIVATE_TARGETS",
        private_hint=(
            "set WORKFLOW_ALLOW_PRIVATE_TARGETS=true to call a workflow engine on this host or LAN"
        ),
        allow_private=bool(settings.workflow_allow_private_targets),
        schemes=("http", "https"),
        service_port=settings.app_port,
        service_networks=own_networks(settings.app_bind, interfaces),
    )


def check_workflow_channels(value: Any) -> tuple[str, ...]:
    """At least one wired channel, each once (order kept; case ignored)."""
    if not isinstance(value, list | tuple):
        raise InvalidInput("channels", CHANNELS_REFUSAL)
    if not value:
        raise InvalidInput(
            "channels", f"must name at least one of {', '.join(WIRED_CHANNELS)}, or it never fires"
        )
    out: list[str] = []
    for item in value:
        channel = check_channel(item, "channels")
        if channel not in out:
            out.append(channel)
    return tuple(out)


def check_channel(value: Any, field: str = "channel") -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"{value!r} is not a channel: use {', '.join(WIRED_CHANNELS)}")
    channel = value.strip().lower()
    if channel in WIRED_CHANNELS:
        return channel
    if channel in UNWIRED_CHANNELS:
        raise InvalidInput(field, f"{UNWIRED_CHANNELS[channel]}; use {', '.join(WIRED_CHANNELS)}")
    raise InvalidInput(
        field, f"unknown channel {value[:64]!r}; choose from {', '.join(WIRED_CHANNELS)}"
    )


def check_filters(pairs: Iterable[tuple[str, str]]) -> Filters:
    """The query string of a listing: ``channel`` one wired channel, ``is_active`` true or
    false, each at most once. Another parameter is refused: a misspelt filter would
    silently list everything."""
    pairs = list(pairs)
    repeated = sorted(name for name, times in Counter(n for n, _ in pairs).items() if times > 1)
    if repeated:
        raise InvalidInput(", ".join(repeated), f"give {', '.join(repeated)} once")
    args = dict(pairs)
    unknown = sorted(set(args) - set(FILTERS))
    if unknown:
        raise InvalidInput(
            ", ".join(unknown),
            f"unknown query parameter(s) {', '.join(unknown)}; the filters: {', '.join(FILTERS)}",
        )
    channel = check_channel(args["channel"]) if "channel" in args else None
    active = None
    if "is_active" in args:
        raw = args["is_active"].strip().lower()
        if raw not in ("true", "false"):
            raise InvalidInput("is_active", f"must be true or false, got {args['is_active']!r}")
        active = raw == "true"
    return Filters(channel, active)
