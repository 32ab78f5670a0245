"""The three kinds of outbound action, their checks, and what the owner configured them to
reach (rule 12: nothing is sent unless configured).

- ``webhook``: a JSON POST to a target NAMED in ``WEBHOOK_TARGETS``. An action never
  carries a URL: it names a target, and the URL comes from the setting (https only).
- ``email``: one message from ``EMAIL_FROM`` to one recipient on
  ``EMAIL_ALLOWED_RECIPIENTS``: a full address matches itself, ``@domain`` matches
  addresses at exactly that domain (not its subdomains); an empty list sends nothing. A
  newline or comma in the recipient or the subject is refused (no header injection, no
  second recipient).
- ``chatops``: a text message to ``CHATOPS_WEBHOOK_URL``.

``check_action`` reads an action from JSON (the ``POST /actions`` body, a model's
proposal, a stored row) and says what is wrong with it; ``Catalog.refusal`` says why a
well-formed action cannot go where it wants to go under the current settings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs

from ragcore.converter import listing, refusal, structure_body
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import SPACE, character_class
from ragcore.settings import Settings
from ragcore.targets.addresses import Reach, own_networks

KINDS = ("webhook", "email", "chatops")
MAX_SUBJECT_CHARS = 200
MAX_BODY_CHARS = 10_000
MAX_TEXT_CHARS = 4_000
MAX_DATA_BYTES = 16_384
MAX_ADDRESS_CHARS = 254
RECIPIENT_REFUSAL = "must be one e-mail address"
_TARGET = re.compile(r"^[a-z0-9_-]{1,64}$")
# an address as a mail server takes it in RCPT TO: dot-atom local part, DNS domain (ASCII)
_ADDRESS = re.compile(
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$"
)


_LINE_BREAKS = "\r\n\x0b\x0c\x85\u2028\u2029"
_SPACES = [code for code in range(0x10000) if chr(code).isspace()]
#: blank space that is not a line break: what may surround a recipient or a subject
_EDGE = character_class([code for code in _SPACES if chr(code) not in _LINE_BREAKS])
#: what a subject may not hold: control characters, line breaks and commas
_NOT_IN_SUBJECT = character_class(sorted({*range(32), 127, *map(ord, _LINE_BREAKS + ",")}))
#: what ``check_target``, ``check_recipient`` and ``check_subject`` take, as patterns
TARGET_TEXT = f"^[{SPACE}]*[A-Za-z0-9_-]{{1,64}}[{SPACE}]*$"
RECIPIENT = f"^[{_EDGE}]*{_ADDRESS.pattern[1:-1]}[{_EDGE}]*$"
SUBJECT = (
    f"^[{_EDGE}]*[^{_NOT_IN_SUBJECT}{SPACE}]"
    f"(?:[^{_NOT_IN_SUBJECT}]*[^{_NOT_IN_SUBJECT}{SPACE}])?[{_EDGE}]*$"
)

TARGET_REFUSAL = (
    "must be the NAME of a webhook target in WEBHOOK_TARGETS (lowercase letters, digits, _ "
    "and -), never a URL"
)
TEXT = refusal("must be text")


def check_target(value: Any) -> str:
    name = value.strip() if isinstance(value, str) else ""
    if not name.isascii() or not _TARGET.fullmatch(name.lower()):  # "K".lower() is "k"
        raise InvalidInput("target", TARGET_REFUSAL)
    return name.lower()


def check_data(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInput("data", "must be a JSON object")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput("data", "must be plain JSON (objects, lists, text, numbers)") from None
    if len(encoded.encode("utf-8")) > MAX_DATA_BYTES:
        raise InvalidInput("data", f"is larger than {MAX_DATA_BYTES} bytes as JSON")
    data: dict[str, Any] = json.loads(encoded)
    return data


def check_recipient(value: Any) -> str:
    """One e-mail address, refused when it holds a newline or a comma (a second recipient
    or a header smuggled in) or is not a plain address."""
    if not isinstance(value, str):
        raise InvalidInput("to", RECIPIENT_REFUSAL)
    if _has_line_break(value) or "," in value or ";" in value:
        raise InvalidInput("to", "must be one address: newlines, commas and semicolons are refused")
    address = value.strip()
    if len(value) > MAX_ADDRESS_CHARS or not _ADDRESS.fullmatch(address):
        raise InvalidInput("to", f"{address[:100]!r} is not a plain e-mail address")
    local, _, domain = address.rpartition("@")
    return f"{local}@{domain.lower()}"


def check_subject(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput("subject", "must be text")
    if _has_line_break(value) or "," in value:
        raise InvalidInput(
            "subject", "must be one line without commas: newlines and commas are refused"
        )
    subject = value.strip()
    if not subject:
        raise InvalidInput("subject", "must not be blank")
    if len(value) > MAX_SUBJECT_CHARS:
        raise InvalidInput(
            "subject", f"has {len(value)} characters; the limit is {MAX_SUBJECT_CHARS}"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in subject):
        raise InvalidInput("subject", "must not contain control characters")
    return subject


def _has_line_break(value: str) -> bool:
    return any(c in value for c in "\r\n\x0b\x0c\x85\u2028\u2029")


def _body(value: Any) -> str:
    return check_text(value, "body", MAX_BODY_CHARS)


def _text(value: Any) -> str:
    return check_text(value, "text", MAX_TEXT_CHARS)


@listing(fields=("kind", "target", "data"), words="a webhook action's fields")
@attrs.frozen
class WebhookAction:
    """POST ``data`` (a JSON object) to the webhook target named ``target``."""

    kind: ClassVar[str] = "webhook"
    target: str = attrs.field(converter=check_target, metadata=refusal(TARGET_REFUSAL))
    data: dict[str, Any] = attrs.field(
        factory=dict,
        converter=check_data,
        metadata=refusal("must be a JSON object"),
    )


@listing(fields=("kind", "to", "subject", "body"), words="a email action's fields")
@attrs.frozen
class EmailAction:
    """Mail ``subject`` and ``body`` (plain text) to ``to``."""

    kind: ClassVar[str] = "email"
    to: str = attrs.field(converter=check_recipient, metadata=refusal(RECIPIENT_REFUSAL))
    subject: str = attrs.field(converter=check_subject, metadata=TEXT)
    body: str = attrs.field(converter=_body, metadata=TEXT)


@listing(fields=("kind", "text"), words="a chatops action's fields")
@attrs.frozen
class ChatopsAction:
    """Post ``text`` to the chat-ops channel."""

    kind: ClassVar[str] = "chatops"
    text: str = attrs.field(converter=_text, metadata=TEXT)


Action = WebhookAction | EmailAction | ChatopsAction
_SHAPES: dict[str, type[Action]] = {
    "webhook": WebhookAction,
    "email": EmailAction,
    "chatops": ChatopsAction,
}


def check_action(body: Any) -> Action:
    """The action ``body`` describes: ``{"kind": "webhook", "target": NAME, "data": {…}}``,
    ``{"kind": "email", "to", "subject", "body"}`` or ``{"kind": "chatops", "text"}``,
    structured into its kind's shape. InvalidInput naming the field and what to change;
    unknown fields are refused."""
    if not isinstance(body, Mapping):
        raise InvalidInput("action", "must be a JSON object with a kind")
    kind = body.get("kind")
    if kind not in KINDS:
        raise InvalidInput("kind", f"must be one of: {', '.join(KINDS)}")
    fields = {name: value for name, value in body.items() if name != "kind"}
    return structure_body(fields, _SHAPES[kind])


def action_json(action: Action) -> dict[str, Any]:
    """The action as JSON, the shape ``check_action`` reads."""
    fields = attrs.asdict(action, recurse=False)
    return {"kind": action.kind, **fields}


def recipient_allowed(address: str, allowed: tuple[str, ...]) -> bool:
    """Whether ``address`` is on the allow list: an entry equal to it (ignoring case), or
    ``@domain`` equal to its whole domain. ``@example.com`` does not let mail go to
    ``x@sales.example.com``; an empty list allows nothing."""
    address = address.strip().lower()
    _, at, domain = address.rpartition("@")
    if not at or not domain:
        return False
    for entry in allowed:
        entry = entry.strip().lower()
        if entry.startswith("@"):
            if domain == entry[1:]:
                return True
        elif address == entry:
            return True
    return False


@attrs.frozen
class Catalog:
    """What the owner configured actions may reach, from the settings."""

    webhook_targets: tuple[tuple[str, str], ...] = ()  # WEBHOOK_TARGETS (name, url)
    email_recipients: tuple[str, ...] = ()  # EMAIL_ALLOWED_RECIPIENTS
    email_missing: tuple[str, ...] = ("SMTP_HOST", "EMAIL_FROM")  # unset mail settings
    chatops: bool = False  # CHATOPS_WEBHOOK_URL is set

    @classmethod
    def from_settings(cls, settings: Settings) -> Catalog:
        needed = (("SMTP_HOST", settings.smtp_host), ("EMAIL_FROM", settings.email_from))
        missing = tuple(name for name, value in needed if not value)
        return cls(
            tuple(settings.webhook_targets),
            tuple(settings.email_allowed_recipients),
            missing,
            bool(settings.chatops_webhook_url),
        )

    @property
    def target_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.webhook_targets)

    def target_url(self, name: str) -> str | None:
        return next((url for n, url in self.webhook_targets if n == name), None)

    def configured_kinds(self) -> tuple[str, ...]:
        """The kinds that can send anything at all under these settings."""
        ready = {
            "webhook": bool(self.webhook_targets),
            "email": not self.email_missing and bool(self.email_recipients),
            "chatops": self.chatops,
        }
        return tuple(kind for kind in KINDS if ready[kind])

    def refusal(self, action: Action) -> str | None:
        """Why ``action`` cannot be sent under these settings; None when it can."""
        if isinstance(action, WebhookAction):
            url = self.target_url(action.target)
            if url is None:
                known = ", ".join(self.target_names) or "none are configured"
                return f"no webhook target named {action.target!r} in WEBHOOK_TARGETS ({known})"
            if urlsplit(url).scheme != "https":
                return f"webhook target {action.target!r} is not an https:// URL"
            return None
        if isinstance(action, EmailAction):
            if self.email_missing:
                return f"e-mail is not configured: set {' and '.join(self.email_missing)}"
            if not self.email_recipients:
                return "EMAIL_ALLOWED_RECIPIENTS is empty, so no e-mail is sent"
            if not recipient_allowed(action.to, self.email_recipients):
                return f"{action.to} is not on EMAIL_ALLOWED_RECIPIENTS"
            return None
        if not self.chatops:
            return "CHATOPS_WEBHOOK_URL is not set"
        return None


def action_reach(settings: Settings, interfaces: Iterable[str] = ()) -> Reach:
    """Where webhook and chat-ops actions may connect: https, public addresses, and
    loopback and private ones too when ACTIONS_ALLOW_PRIVATE_TARGETS is on (local
    testing). ``interfaces``: the host's addresses, when APP_BIND is every interface."""
    return Reach(
        calls="actions",
        setting="ACTIONS_ALLOW_PRIVATE_TARGETS",
        private_hint="ACTIONS_ALLOW_PRIVATE_TARGETS is off; only public addresses are called",
        allow_private=bool(settings.actions_allow_private_targets),
        schemes=("https",),
        service_port=settings.app_port,
        service_networks=own_networks(settings.app_bind, interfaces),
    )


def describe(action: Action) -> str:
    """What and to whom, in a few words: ``webhook "crm"``, ``e-mail to a@b.example``."""
    if isinstance(action, WebhookAction):
        return f'webhook "{action.target}"'
    if isinstance(action, EmailAction):
        return f"e-mail to {action.to}"
    return "chat-ops message"


def preview(action: Action, limit: int = 400) -> str:
    """The content, shortened to ``limit`` characters, for the owner to judge."""
    if isinstance(action, WebhookAction):
        text = json.dumps(action.data, ensure_ascii=False, sort_keys=True)
    elif isinstance(action, EmailAction):
        text = f"Subject: {action.subject}\n{action.body}"
    else:
        text = action.text
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
