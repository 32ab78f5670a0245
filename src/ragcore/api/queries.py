"""Query parameters read into their shape: the limits a shape declares (and
/openapi.json shows) are the ones enforced."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from ragcore.api.schema import SCHEMA_KEY
from ragcore.errors import InvalidInput

Shape = TypeVar("Shape")


def read_query(shape: type[Shape], args: Mapping[str, str]) -> Shape:
    """``args`` as ``shape``: a parameter not given keeps its default, a whole-number one
    must lie within its field's ``minimum`` and ``maximum`` (InvalidInput naming it
    otherwise). Parameters the shape does not have are left to the route."""
    hints = typing.get_type_hints(shape)
    given: dict[str, Any] = {}
    for field in attrs.fields(shape):  # type: ignore[misc]
        raw = args.get(field.name)
        if raw is None:
            continue
        if hints[field.name] is int:
            limits = field.metadata.get(SCHEMA_KEY, {})
            given[field.name] = _whole(raw, field.name, limits["minimum"], limits["maximum"])
        else:
            given[field.name] = raw
    return shape(**given)


def _whole(raw: str, name: str, minimum: int, maximum: int) -> int:
    digits = raw.isascii() and raw.isdigit() and len(raw) <= len(str(maximum))
    if not digits or not minimum <= int(raw) <= maximum:
        raise InvalidInput(name, f"must be a whole number from {minimum} to {maximum}")
    return int(raw)
