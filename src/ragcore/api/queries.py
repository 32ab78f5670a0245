"""Query parameters read into their shape (the limits a shape declares, and
/openapi.json shows, are the ones enforced), and ids in a path."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from ragcore.api.problems import ProblemError
from ragcore.errors import InvalidInput
from ragcore.schema import field_schema

Shape = TypeVar("Shape")
MAX_STORED_ID = 2**63 - 1  # ids are PostgreSQL bigints


def read_query(shape: type[Shape], args: Mapping[str, str]) -> Shape:
    """``args`` as ``shape``: a parameter not given keeps its default (one without is
    required), a whole-number one must lie within its field's ``minimum`` and ``maximum``,
    a text one be at most its ``maxLength`` characters and one of its ``enum`` when it has
    one (InvalidInput naming it otherwise). Parameters the shape does not have are left
    to the route."""
    hints = typing.get_type_hints(shape, include_extras=True)
    given: dict[str, Any] = {}
    for field in attrs.fields(shape):  # type: ignore[arg-type]
        raw = args.get(field.name)
        kind, limits = field_schema(hints[field.name])
        if raw is None:
            if field.default is attrs.NOTHING:
                meaning = limits.get("description")
                raise InvalidInput(
                    field.name, f"is required: {meaning}" if meaning else "is required"
                )
            continue
        if kind is int:
            given[field.name] = _whole(raw, field.name, limits["minimum"], limits["maximum"])
        else:
            if "maxLength" in limits and len(raw) > limits["maxLength"]:
                raise InvalidInput(field.name, f"is longer than {limits['maxLength']} characters")
            if "enum" in limits and raw not in limits["enum"]:
                allowed = ", ".join(value for value in limits["enum"] if value)
                raise InvalidInput(field.name, f"must be one of {allowed}, or left out")
            given[field.name] = raw
    return shape(**given)


def _whole(raw: str, name: str, minimum: int, maximum: int) -> int:
    digits = raw.isascii() and raw.isdigit() and len(raw) <= len(str(maximum))
    if not digits or not minimum <= int(raw) <= maximum:
        raise InvalidInput(name, f"must be a whole number from {minimum} to {maximum}")
    return int(raw)


def stored_id(raw: str) -> int | None:
    """A path id as a stored id, or None when it cannot be one: then nothing has it, and
    the route answers 404 as for an unknown id."""
    digits = raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_STORED_ID))
    if not digits or not 0 < int(raw) <= MAX_STORED_ID:
        return None
    return int(raw)


def path_id(raw: str, what: str, listed_at: str) -> int:
    """The stored id a path names; a 404 problem like an unknown id's when it cannot be one."""
    found = stored_id(raw)
    if found is None:
        raise no_such(raw, what, listed_at)
    return found


def no_such(raw: str, what: str, listed_at: str) -> ProblemError:
    """The 404 problem for an id nothing has: it says where they are listed."""
    return ProblemError(404, f"no {what} {raw[:40]!r}; GET {listed_at} lists them")


def contains_pattern(q: str) -> str | None:
    """The ILIKE pattern of the names (or texts) that contain ``q`` (its %, _ and
    backslash taken as themselves); None for a blank ``q``: every one."""
    if not q:
        return None
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
