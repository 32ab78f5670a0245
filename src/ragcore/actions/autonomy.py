"""The autonomy setting (``GET``/``POST /autonomy``) and the gate every action passes.

The setting: ``mode`` (``off``, ``semi``, ``full``; ``off`` until the owner changes it),
the owner's identity for approvals (``approval_channel`` and ``approval_target``: the
owner's Telegram chat id, WhatsApp number or Discord user id), which action kinds are
allowed, and what sensitive roles are held to (``semi``, or ``off``).

The gate (``gate_action``), a pure rule:

1. A kind the owner did not allow is refused.
2. The level is the mode, lowered to the role's own ``autonomy`` when a role acts.
3. A sensitive role (rule 13, ``ragcore.employees.sensitivity``) is capped at ``semi``
   whatever the mode, or held to ``off`` when ``sensitive_roles`` is ``off``.
4. ``off`` refuses (the refusal is logged), ``semi`` holds the action and asks the owner,
   ``full`` executes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

import attrs

from ragcore.actions.kinds import KINDS, Action, Catalog
from ragcore.channel_names import TEXT_CHANNELS
from ragcore.converter import listing, refusal, structure_body, unless_sent
from ragcore.employees.roles import AUTONOMY_LEVELS, Autonomy, Role, autonomy_rank
from ragcore.employees.sensitivity import Sensitivity, assess_sensitivity, effective_autonomy
from ragcore.errors import InvalidInput
from ragcore.inputs import SPACE, whole_number
from ragcore.schema import described, whole

APPROVAL_CHANNELS = TEXT_CHANNELS
SENSITIVE_LEVELS: tuple[Autonomy, ...] = ("semi", "off")
CHANNEL_REFUSAL = f"must be one of: {', '.join(APPROVAL_CHANNELS)}"
OWNER_CHANNEL_NEEDED = f"is needed with approval_target: one of {', '.join(APPROVAL_CHANNELS)}"
KINDS_REFUSAL = f"must be a list of: {', '.join(KINDS)}"
OWNER = "the owner's Telegram chat id, WhatsApp number (+E.164) or Discord user id"
SENSITIVE = "what sensitive roles are held to, whatever the mode"
_TARGETS = {
    "telegram": (
        re.compile(r"^-?[0-9]{1,20}$"),
        "a Telegram chat id (digits, as in the bot's updates: message.chat.id)",
    ),
    "whatsapp": (
        re.compile(r"^\+[1-9][0-9]{6,14}$"),
        "a phone number in E.164 form such as +14155238886",
    ),
    "discord": (
        re.compile(r"^[0-9]{5,21}$"),
        "a Discord user id (digits; Developer Mode, Copy User ID)",
    ),
}
_AROUND = f"[{SPACE}]*"
#: ``approval_target`` for each channel as ``normalize_target`` takes it, as a schema: the
#: chat and user ids as text or a whole number, the number as text (whatsapp: and
#: spaces and dashes in it dropped, its + added)
TARGET_SCHEMAS: dict[str, dict[str, Any]] = {
    "telegram": {
        "type": ["string", "integer"],
        "pattern": f"^{_AROUND}-?[0-9]{{1,20}}{_AROUND}$",
        "minimum": -(10**20 - 1),
        "maximum": 10**20 - 1,
    },
    "whatsapp": {
        "type": "string",
        "pattern": (
            f"^{_AROUND}(?:whatsapp:)?[ -]*\\+?[ -]*[1-9](?:[ -]*[0-9]){{6,14}}[ -]*{_AROUND}$"
        ),
    },
    "discord": {
        "type": ["string", "integer"],
        "pattern": f"^{_AROUND}[0-9]{{5,21}}{_AROUND}$",
        "minimum": 10**4,
        "maximum": 10**21 - 1,
    },
}
NO_OWNER = [None, ""]
#: which owner fields go together: none, the channel cleared (null or ""), a channel with
#: its target, or one of them alone, judged with the other as stored (refused when what is
#: stored does not fit: no owner for a target alone, a stored target of another channel's
#: form for a channel alone)
OWNER_TOGETHER = [
    {"properties": {"approval_channel": False, "approval_target": False}},
    {
        "required": ["approval_channel"],
        "properties": {
            "approval_channel": {"enum": list(APPROVAL_CHANNELS)},
            "approval_target": False,
        },
    },
    {
        "required": ["approval_target"],
        "properties": {
            "approval_channel": False,
            "approval_target": {"anyOf": list(TARGET_SCHEMAS.values())},
        },
    },
    {
        "required": ["approval_channel"],
        "properties": {
            "approval_channel": {"enum": NO_OWNER},
            "approval_target": {"enum": NO_OWNER},
        },
    },
    *(
        {
            "required": ["approval_channel", "approval_target"],
            "properties": {"approval_channel": {"const": channel}, "approval_target": schema},
        }
        for channel, schema in TARGET_SCHEMAS.items()
    ),
]


@attrs.frozen
class AutonomyConfig:
    """The stored autonomy setting; the default is everything off, no owner set."""

    mode: Autonomy = "off"
    approval_channel: str | None = None
    approval_target: str | None = None
    allowed_kinds: tuple[str, ...] = attrs.field(default=KINDS, converter=tuple)
    sensitive_roles: Autonomy = "semi"
    updated_at: datetime | None = None

    @property
    def owner_set(self) -> bool:
        return bool(self.approval_channel and self.approval_target)


def _levels(allowed: tuple[Autonomy, ...]) -> Any:
    """A level field of AutonomyUpdate: one of ``allowed``, None when not sent."""
    return unless_sent(refused=f"must be one of: {', '.join(allowed)}")


@listing(words="allowed")
@whole(anyOf=OWNER_TOGETHER)
@attrs.frozen
class AutonomyUpdate:
    """The fields to change; unknown fields and values are 422, naming the allowed ones.
    approval_channel null (or "") clears the owner (decisions through the API only); a
    channel or a target sent alone is judged with the other as stored."""

    mode: Autonomy | None = _levels(AUTONOMY_LEVELS)
    approval_channel: Annotated[str | None, described(enum=[*APPROVAL_CHANNELS, *NO_OWNER])] = (
        attrs.field(default=None, metadata=refusal(CHANNEL_REFUSAL))
    )
    approval_target: Annotated[Any, described(OWNER, type=["string", "integer", "null"])] = None
    allowed_kinds: Annotated[tuple[Any, ...] | None, described(items={"enum": list(KINDS)})] = (
        unless_sent(lambda value: _kinds(value), KINDS_REFUSAL)
    )
    sensitive_roles: Annotated[Literal["semi", "off"] | None, described(SENSITIVE)] = _levels(
        SENSITIVE_LEVELS
    )


def check_update(body: Mapping[str, Any], current: AutonomyConfig) -> AutonomyConfig:
    """A ``POST /autonomy`` body applied to ``current``: fields not given keep their value
    (the owner's two fields are judged together, a field not given as stored; see
    ``OWNER_TOGETHER``). InvalidInput (422) for an unknown field or value, naming the
    allowed ones."""
    owner = ("approval_channel", "approval_target")  # null clears them, as "" does
    update = structure_body(
        {name: "" if name in owner and value is None else value for name, value in body.items()},
        AutonomyUpdate,
    )
    changes: dict[str, Any] = {
        name: getattr(update, name)
        for name in ("mode", "sensitive_roles", "allowed_kinds")
        if getattr(update, name) is not None
    }
    # a field not given is the stored one's: a new target for the stored channel, or a
    # new channel for the stored target (the rule no schema can state: it depends on
    # what is stored)
    channel = (
        current.approval_channel if update.approval_channel is None else update.approval_channel
    )
    target = current.approval_target if update.approval_target is None else update.approval_target
    if channel in (None, ""):  # no owner: both cleared (approvals only through the API)
        if update.approval_target not in (None, ""):
            raise InvalidInput("approval_channel", OWNER_CHANNEL_NEEDED)
        changes["approval_channel"] = changes["approval_target"] = None
    else:
        if channel not in APPROVAL_CHANNELS:
            raise InvalidInput("approval_channel", CHANNEL_REFUSAL)
        changes["approval_channel"] = channel
        changes["approval_target"] = normalize_target(channel, target)
    return attrs.evolve(current, **changes)


def _kinds(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInput("allowed_kinds", KINDS_REFUSAL)
    unknown = [v for v in value if v not in KINDS]
    if unknown:
        raise InvalidInput(
            "allowed_kinds", f"unknown kind(s) {', '.join(unknown)}; allowed: {', '.join(KINDS)}"
        )
    return tuple(kind for kind in KINDS if kind in value)


def normalize_target(channel: str, value: Any) -> str:
    """The owner's address on ``channel`` as approvals compare it: a WhatsApp number is
    kept as ``+digits`` (``whatsapp:`` and spaces dropped)."""
    pattern, what = _TARGETS[channel]
    number = None if channel == "whatsapp" else whole_number(value)  # a number's + is text
    if not isinstance(value, str) and number is None:
        raise InvalidInput("approval_target", f"must be {what}")
    text = value.strip() if isinstance(value, str) else str(number)
    if channel == "whatsapp":
        text = text.removeprefix("whatsapp:").replace(" ", "").replace("-", "")
        text = text if text.startswith("+") else f"+{text}"
    if not pattern.fullmatch(text):
        raise InvalidInput("approval_target", f"must be {what}")
    return text


def reach(catalog: Catalog) -> dict[str, Any]:
    """What each kind can reach under the settings: target names, never their URLs (the
    chat-ops URL is a secret)."""
    configured = catalog.configured_kinds()
    return {
        "webhook": {"configured": "webhook" in configured, "targets": list(catalog.target_names)},
        "email": {
            "configured": "email" in configured,
            "recipients": list(catalog.email_recipients),
            "missing": list(catalog.email_missing),
        },
        "chatops": {"configured": "chatops" in configured},
    }


# ---------------------------------------------------------------- the gate


@attrs.frozen
class ActingRole:
    """The role an action comes from: its identifier, its own autonomy and rule 13."""

    identifier: str
    autonomy: Autonomy
    sensitivity: Sensitivity

    @classmethod
    def of(
        cls, role: Role, extra: Iterable[str] = (), reviewed_safe: Iterable[str] = ()
    ) -> ActingRole:
        return cls(role.identifier, role.autonomy, assess_sensitivity(role, extra, reviewed_safe))


@attrs.frozen
class Execute:
    """Send it now."""

    why: str


@attrs.frozen
class AskOwner:
    """Hold it; the owner says YES or NO."""

    why: str


@attrs.frozen
class Refuse:
    """Send nothing; the refusal is logged."""

    why: str


Gate = Execute | AskOwner | Refuse


def acting_level(role: ActingRole | None, autonomy: AutonomyConfig) -> tuple[Autonomy, str]:
    """The level an action is gated at, and why (rules 2 and 3 of the module)."""
    level, why = autonomy.mode, f"autonomy is {autonomy.mode}"
    if role is None:
        return level, why
    if autonomy_rank(role.autonomy) < autonomy_rank(level):
        level, why = role.autonomy, f"role {role.identifier}'s autonomy is {role.autonomy}"
    if role.sensitivity.sensitive:
        capped = effective_autonomy(level, role.sensitivity)
        if autonomy.sensitive_roles == "off":
            capped = "off"
        if capped != level:
            level = capped
            why = (
                f"{role.identifier} is a sensitive role, held to {capped} "
                f"({role.sensitivity.explain()})"
            )
    return level, why


def gate_action(action: Action, role: ActingRole | None, autonomy: AutonomyConfig) -> Gate:
    """Execute, ask the owner, or refuse ``action`` from ``role`` (None: the owner asked
    through the API) under ``autonomy``."""
    if action.kind not in autonomy.allowed_kinds:
        allowed = ", ".join(autonomy.allowed_kinds) or "none"
        return Refuse(f"{action.kind} actions are not allowed (allowed_kinds: {allowed})")
    level, why = acting_level(role, autonomy)
    if level == "full":
        return Execute(why)
    if level == "semi":
        return AskOwner(why)
    return Refuse(why)
