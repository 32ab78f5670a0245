"""attrs classes as JSON Schema 2020-12 (the dialect of OpenAPI 3.1), so the API's
shapes are described by the classes that carry them and never restated by hand.

A field's type gives its schema; ``Annotated[type, described(…)]`` adds what a type cannot say (a
description, a limit, a pattern), taken from the constants the rules enforce, and
``@whole(…)`` what no one field can say (which fields go together).

What a request may hold is said in full (``Schemas.request``): every text in it, keys of
free-form objects too, is text storage can hold (``ragcore.inputs``), as the service
checks where it reads input.
"""

from __future__ import annotations

import datetime
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ragcore.inputs import NOT_BLANK, STORABLE

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
#: left as it is), never for a JSON null (``ragcore.converter.unless_sent``)
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


_WHOLE: dict[type, dict[str, Any]] = {}


def whole(**keywords: Any) -> Any:
    """Class decorator: schema keywords about the shape as a whole, which no one field's
    can say (``anyOf`` of the fields that go together, ``minProperties``)."""

    def register(shape: Any) -> Any:
        _WHOLE[shape] = keywords
        return shape

    return register


def text(limit: int, description: str = "", /, **keywords: Any) -> Schema:
    """A text field as ``ragcore.errors.check_text`` takes it: not blank, at most
    ``limit`` characters as sent."""
    return described(description, maxLength=limit, pattern=NOT_BLANK, **keywords)


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
        self._closing = False

    def ref(self, cls: type, *, closed: bool = False) -> dict[str, Any]:
        """``{"$ref": …}`` to ``cls``'s component, described on first use; a ``closed``
        class (a request body, and the classes in it) admits no other properties, and
        says what its text may hold (``request``)."""
        if closed or self._closing:
            self.closed.add(cls)
        name = cls.__name__
        if name not in self.components:
            self.components[name] = {}  # taken: a class that refers to itself stops here
            closing, self._closing = self._closing, cls in self.closed
            try:
                self.components[name] = self.object(cls)
            finally:
                self._closing = closing
        return {"$ref": f"#/components/schemas/{name}"}

    def body(self, shape: type | OneOf) -> dict[str, Any]:
        """The schema of a request body of ``shape`` (an attrs class, or one of several):
        closed, each class in it too."""
        closing, self._closing = self._closing, True
        try:
            return self.ref(shape, closed=True) if isinstance(shape, type) else self.of(shape)
        finally:
            self._closing = closing

    def request(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` (of a request's part) with what the service takes of any text said:
        a text without a pattern of its own gets ``STORABLE`` (a pattern of our own says
        it already), a free-form object's keys too, and a value of any type is
        ``StorableJSON``. References are left as they are: a closed class's component is
        made so itself."""
        if not isinstance(schema, dict):
            return schema  # true or false
        if schema == {}:
            return self._storable_json()
        made = dict(schema)
        kinds = made.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if "string" in kinds and not {"pattern", "enum", "const", "format"} & made.keys():
            made["pattern"] = STORABLE
        if "object" in kinds and made.get("additionalProperties") is not False:
            made.setdefault("propertyNames", {"pattern": STORABLE})
            made.setdefault("additionalProperties", {})
        for key in ("items", "additionalProperties"):
            if isinstance(made.get(key), dict):
                made[key] = self.request(made[key])
        if "properties" in made:
            made["properties"] = {k: self.request(v) for k, v in made["properties"].items()}
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if key in made:
                made[key] = [self.request(option) for option in made[key]]
        return made

    def _storable_json(self) -> dict[str, Any]:
        """``{"$ref": …}`` to StorableJSON: any JSON value whose texts can be stored."""
        name = "StorableJSON"
        ref = {"$ref": f"#/components/schemas/{name}"}
        self.components[name] = {
            "description": "any JSON value, each text in it (keys too) without a NUL",
            "anyOf": [
                {"type": "string", "pattern": STORABLE},
                {"type": ["number", "boolean", "null"]},
                {"type": "array", "items": ref},
                {
                    "type": "object",
                    "propertyNames": {"pattern": STORABLE},
                    "additionalProperties": ref,
                },
            ],
        }
        return ref

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
        schema.update(_WHOLE.get(cls, {}))
        if cls in self.closed:
            schema["additionalProperties"] = False
            schema = self.request(schema)
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
