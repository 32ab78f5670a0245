"""Editing a role: the rules for a ``PATCH /employees/{role}`` body, merging it into the
stored role (or creating a runtime role from it), and the role as the API shows it.

The runner loads the stored role, calls ``apply_patch`` and stores the result; every
rule about what may change, and how, lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import attrs

from ragcore.converter import listing, structure_body, unless_sent
from ragcore.employees.roles import (
    _IDENTIFIER,
    AUTONOMY_LEVELS,
    IDENTIFIER_RULE,
    Autonomy,
    Role,
    check_autonomy,
    check_role_identifier,
)
from ragcore.errors import InvalidInput, check_text
from ragcore.schema import described, text

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
IDENTIFIERS_REFUSAL = "must be a list of identifiers"
#: the schema of channels and skill_tags (``_identifiers``)
IDENTIFIERS = {
    "type": "array",
    "items": {"type": "string", "pattern": _IDENTIFIER.pattern},
    "maxItems": MAX_LIST_ITEMS,
}
AUTONOMY_REFUSAL = f"must be one of: {', '.join(AUTONOMY_LEVELS)}"


@listing(read_only=READ_ONLY_FIELDS, words="the fields you can change")
@attrs.frozen
class EmployeePatch:
    """The fields to change; display_name and personality are required to create a
    runtime role. Unknown fields are refused (422)."""

    display_name: Annotated[str | None, text(MAX_DISPLAY_NAME_CHARS)] = unless_sent(
        lambda value: check_text(value, "display_name", MAX_DISPLAY_NAME_CHARS)
    )
    personality: Annotated[str | None, text(MAX_PERSONALITY_CHARS)] = unless_sent(
        lambda value: check_text(value, "personality", MAX_PERSONALITY_CHARS)
    )
    channels: Annotated[tuple[Any, ...] | None, described(**IDENTIFIERS)] = unless_sent(
        lambda value: _identifiers(value, "channels"), IDENTIFIERS_REFUSAL
    )
    skill_tags: Annotated[tuple[Any, ...] | None, described(**IDENTIFIERS)] = unless_sent(
        lambda value: _identifiers(value, "skill_tags"), IDENTIFIERS_REFUSAL
    )
    autonomy: Autonomy | None = unless_sent(check_autonomy, AUTONOMY_REFUSAL)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


def check_patch(body: Mapping[str, Any]) -> EmployeePatch:
    """The PATCH body checked: known fields only (unknown and read-only ones are refused by
    name, never ignored), each of the right type and within its limits."""
    return structure_body(body, EmployeePatch)


def apply_patch(identifier: str, existing: Role | None, patch: EmployeePatch) -> Role:
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


def _identifiers(value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise InvalidInput(field, IDENTIFIERS_REFUSAL)
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
