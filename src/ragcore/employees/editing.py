"""Editing a role: the rules for a ``PATCH /employees/{role}`` body, merging it into the
stored role (or creating a runtime role from it), and the role as the API shows it.

The runner loads the stored role, calls ``apply_patch`` and stores the result; every
rule about what may change, and how, lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs

from ragcore.employees.roles import (
    IDENTIFIER_RULE,
    Autonomy,
    Role,
    check_autonomy,
    check_role_identifier,
)
from ragcore.employees.sensitivity import Sensitivity, effective_autonomy
from ragcore.errors import InvalidInput, check_text, refuse_unknown_fields

EDITABLE_FIELDS = ("display_name", "personality", "channels", "skill_tags", "autonomy")
# Fields the API shows but derives or fixes itself: sending them back is refused by name.
READ_ONLY_FIELDS = (
    "identifier",
    "built_in",
    "sensitive",
    "sensitivity",
    "effective_autonomy",
    "created_at",
    "updated_at",
)
REQUIRED_TO_CREATE = ("display_name", "personality")
MAX_DISPLAY_NAME_CHARS = 100
MAX_PERSONALITY_CHARS = 8000
MAX_LIST_ITEMS = 32


@attrs.frozen
class RolePatch:
    """The checked fields of a PATCH body; ``None`` means "leave as it is"."""

    display_name: str | None = None
    personality: str | None = None
    channels: tuple[str, ...] | None = None
    skill_tags: tuple[str, ...] | None = None
    autonomy: Autonomy | None = None

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


def check_patch(body: Mapping[str, Any]) -> RolePatch:
    """The PATCH body checked: known fields only (unknown and read-only ones are refused by
    name, never ignored), each of the right type and within its limits."""
    refuse_unknown_fields(
        body, EDITABLE_FIELDS, READ_ONLY_FIELDS, listing="the fields you can change"
    )
    fields: dict[str, Any] = {}
    for name, limit in (
        ("display_name", MAX_DISPLAY_NAME_CHARS),
        ("personality", MAX_PERSONALITY_CHARS),
    ):
        if name in body:
            fields[name] = check_text(body[name], name, limit)
    for name in ("channels", "skill_tags"):
        if name in body:
            fields[name] = _identifiers(body[name], name)
    if "autonomy" in body:
        fields["autonomy"] = check_autonomy(body["autonomy"])
    return RolePatch(**fields)


def apply_patch(identifier: str, existing: Role | None, patch: RolePatch) -> Role:
    """The role after ``patch``: the stored role with the given fields replaced, or, when
    ``identifier`` is new, a runtime role (display name and personality required; channels
    and skill tags default to none, autonomy to ``semi``)."""
    if existing is not None:
        return attrs.evolve(existing, **patch.given())
    check_role_identifier(identifier)
    missing = [name for name in REQUIRED_TO_CREATE if getattr(patch, name) is None]
    if missing:
        raise InvalidInput(
            ", ".join(missing),
            f"{' and '.join(missing)} required to create the new role {identifier!r}",
        )
    return Role(identifier=identifier, **patch.given())


def role_view(
    role: Role,
    sensitivity: Sensitivity,
    *,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
) -> dict[str, Any]:
    """The role as the API shows it: its fields, whether it is sensitive and why (rule 13),
    and the autonomy it acts with next to the one configured."""
    return {
        "identifier": role.identifier,
        "display_name": role.display_name,
        "personality": role.personality,
        "channels": list(role.channels),
        "skill_tags": list(role.skill_tags),
        "autonomy": role.autonomy,
        "effective_autonomy": effective_autonomy(role.autonomy, sensitivity),
        "built_in": role.built_in,
        "sensitive": sensitivity.sensitive,
        "sensitivity": {
            "reason": sensitivity.reason,
            "marker": sensitivity.marker,
            "field": sensitivity.field,
            "setting": sensitivity.setting,
            "explanation": sensitivity.explain(),
        },
        "created_at": created_at.isoformat() if created_at else None,
        "updated_at": updated_at.isoformat() if updated_at else None,
    }


def _identifiers(value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InvalidInput(field, "must be a list of identifiers")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidInput(field, f"has {len(value)} items; the limit is {MAX_LIST_ITEMS}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not _is_identifier(item):
            raise InvalidInput(field, f"{item!r} is not allowed: each item: {IDENTIFIER_RULE}")
        if item not in out:
            out.append(item)
    return tuple(out)


def _is_identifier(value: str) -> bool:
    try:
        check_role_identifier(value)
    except InvalidInput:
        return False
    return True


def follow_defaults(stored: Role, default: Role, edited: Iterable[str]) -> Role:
    """A built-in role as it should be stored: ``default`` (the code's current version) in
    every field the owner has not ``edited``, the stored value in the others."""
    kept = set(edited)
    fields = {name: getattr(default, name) for name in EDITABLE_FIELDS if name not in kept}
    return attrs.evolve(stored, **fields)
