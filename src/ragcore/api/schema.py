"""attrs classes as JSON Schema 2020-12 (the dialect of OpenAPI 3.1), so the API's
shapes are described by the classes that carry them and never restated by hand.

A field's type gives its schema; ``Annotated[type, described(…)]`` adds what a type cannot say (a
description, a limit, a pattern), taken from the constants the rules enforce.
"""

from __future__ import annotations

import datetime
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    bytes: {"type": "string", "format": "binary"},
    type(None): {"type": "null"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    Any: {},
    object: {},
}


#: attrs field metadata: the field's None stands for "not sent" (a PATCH body's field
#: left as it is), never for a JSON null (``ragcore.api.converter.unless_sent``)
UNLESS_SENT = "unless sent"


@attrs.frozen(eq=False)  # hashed by identity: typing caches Annotated types by their parts
class Schema:
    """What a field's type cannot say about it, for its JSON Schema: carried in the type
    as ``Annotated[str, described("…", maxLength=…)]``."""

    keywords: dict[str, Any]


def described(description: str = "", /, **keywords: Any) -> Schema:
    """A description and schema keywords (``maxLength=MAX_NAME_CHARS``, ``pattern=…``)
    for ``Annotated``, taken from the constants the rules enforce."""
    if description:
        keywords["description"] = description
    return Schema(keywords)


def field_schema(hint: Any) -> tuple[Any, dict[str, Any]]:
    """The type inside ``Annotated[type, described(…)]`` and the keywords ``described``
    added (none for a plain type)."""
    if typing.get_origin(hint) is not typing.Annotated:
        return hint, {}
    base, *extras = typing.get_args(hint)
    keywords: dict[str, Any] = {}
    for extra in extras:
        if isinstance(extra, Schema):
            keywords.update(extra.keywords)
    return base, keywords


def without_none(hint: Any) -> Any:
    """``T`` of ``T | None``; any other type as it is."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


@attrs.frozen
class OneOf:
    """A named component that is exactly one of ``shapes`` (events told apart by a tag)."""

    name: str
    shapes: tuple[type, ...]
    description: str = ""


class Schemas:
    """Collects the attrs classes a description refers to, as named components."""

    def __init__(self) -> None:
        self.components: dict[str, dict[str, Any]] = {}
        self.closed: set[type] = set()

    def ref(self, cls: type, *, closed: bool = False) -> dict[str, Any]:
        """``{"$ref": …}`` to ``cls``'s component, described on first use; a ``closed``
        class (a request body) admits no other properties."""
        if closed:
            self.closed.add(cls)
        name = cls.__name__
        if name not in self.components:
            self.components[name] = {}  # taken: a class that refers to itself stops here
            self.components[name] = self.object(cls)
        return {"$ref": f"#/components/schemas/{name}"}

    def object(self, cls: type) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, include_extras=True)
        properties: dict[str, Any] = {}
        required = []
        for field in attrs.fields(cls):
            hint = hints[field.name]
            if field.metadata.get(UNLESS_SENT):
                base, keywords = field_schema(hint)
                hint = typing.Annotated[without_none(base), Schema(keywords)]
            properties[field.name] = self.of(hint)
            if field.default is attrs.NOTHING:
                required.append(field.name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if cls.__doc__:
            schema["description"] = " ".join(cls.__doc__.split())
        if required:
            schema["required"] = required
        if cls in self.closed:
            schema["additionalProperties"] = False
        return schema

    def of(self, hint: Any) -> dict[str, Any]:
        """The schema of a type annotation."""
        hint, extra = field_schema(hint)
        if extra:
            return {**self.of(hint), **extra}
        if isinstance(hint, OneOf):
            if hint.name not in self.components:
                options = [self.ref(shape) for shape in hint.shapes]
                self.components[hint.name] = {"description": hint.description, "oneOf": options}
            return {"$ref": f"#/components/schemas/{hint.name}"}
        if hint in _PRIMITIVES:
            return dict(_PRIMITIVES[hint])
        if attrs.has(hint):
            return self.ref(hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin in (typing.Union, types.UnionType):
            return self._union([self.of(arg) for arg in args])
        if origin in (list, tuple, Sequence) or hint in (list, tuple):
            item = args[0] if args else Any
            return {"type": "array", "items": self.of(item)}
        if origin in (dict, Mapping) or hint is dict:
            values = args[1] if args else Any
            return {"type": "object", "additionalProperties": self.of(values)}
        raise TypeError(f"no JSON Schema for {hint!r}")

    @staticmethod
    def _union(options: list[dict[str, Any]]) -> dict[str, Any]:
        """A union of plain types as one ``type`` list; anything else as ``anyOf``."""
        if all(set(option) <= {"type"} for option in options):
            return {"type": [option["type"] for option in options]}
        nullable = {"type": "null"} in options
        rest = [option for option in options if option != {"type": "null"}]
        if nullable and len(rest) == 1 and set(rest[0]) <= {"type", "format", "enum"}:
            merged = dict(rest[0])
            merged["type"] = [merged.get("type", "string"), "null"]
            if "enum" in merged:
                merged["enum"] = [*merged["enum"], None]
            return merged
        return {"anyOf": options}
