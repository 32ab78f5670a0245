"""The one converter between the API's JSON and its attrs shapes: times as ISO 8601,
JSON types taken as they are (5 is never quietly "5"; 5.0 is 5, as JSON has one kind of
number), and a body with a field its shape does not have is refused, never half-read.

``structure_body`` is the one path a request body takes into its shape. What cattrs
refuses becomes ``InvalidInput`` naming the field, in the API's words: an unknown field
lists the ones the shape has, a missing or mistyped field says what to send (the field's
``refusal`` metadata, or the plain words for its type). Rules that are more than a type
run as the shape's attrs converters and validators and raise ``InvalidInput`` themselves.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, list_structure_factory
from cattrs.errors import ForbiddenExtraKeysError
from cattrs.gen import make_dict_unstructure_fn, override

from ragcore.errors import InvalidInput, refuse_unknown_fields
from ragcore.inputs import whole_number
from ragcore.schema import UNLESS_SENT, field_schema, without_none

Shape = TypeVar("Shape")
REFUSAL = "refusal"
#: what a field of a type is told when the JSON sent has another type, or none
PLAIN_WORDS = {
    str: "must be text",
    int: "must be a whole number",
    float: "must be a number",
    bool: "must be true or false (a JSON boolean)",
    list: "must be a list",
    tuple: "must be a list",
}


class WrongType(TypeError):
    """A JSON value of another type than its field's."""


converter = cattrs.Converter(forbid_extra_keys=True)
converter.register_unstructure_hook(datetime, datetime.isoformat)
converter.register_structure_hook(
    datetime,
    lambda value, _: value if isinstance(value, datetime) else datetime.fromisoformat(value),
)


def _strict(*types: type) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if type(value) not in types:  # bool is not an int here, as it is not in JSON
            raise WrongType(f"{value!r} is not {types[0].__name__}")
        return value

    return structure


def _whole(value: Any, _: Any) -> int:
    number = whole_number(value)  # 5.0 is 5 in JSON, as in JSON Schema's "integer"
    if number is None:
        raise WrongType(f"{value!r} is not a whole number")
    return number


for _kind in (str, bool):
    converter.register_structure_hook(_kind, _strict(_kind))
converter.register_structure_hook(int, _whole)
converter.register_structure_hook(float, _strict(float, int))


Hook = Callable[[Any, Any], Any]


def _array(factory: Callable[[Any, Any], Hook]) -> Callable[[Any, cattrs.BaseConverter], Hook]:
    """A list or tuple field takes a JSON array only (never a text's letters)."""

    def make(kind: Any, conv: cattrs.BaseConverter) -> Hook:
        items = factory(kind, conv)

        def structure(value: Any, cl: Any) -> Any:
            if type(value) is not list:
                raise WrongType(f"{value!r} is not an array")
            return items(value, cl)

        return structure

    return make


def _is_list(kind: Any) -> bool:
    return bool(kind is list or typing.get_origin(kind) is list)


def _is_tuple_of_any_length(kind: Any) -> bool:
    return typing.get_origin(kind) is tuple and typing.get_args(kind)[-1:] == (...,)


converter.register_structure_hook_factory(_is_list, _array(list_structure_factory))
converter.register_structure_hook_factory(
    _is_tuple_of_any_length, _array(homogenous_tuple_structure_factory)
)


def _has_absent_fields(kind: Any) -> bool:
    return attrs.has(kind) and any(f.metadata.get(UNLESS_SENT) for f in attrs.fields(kind))


def _omitting_absent(kind: Any, conv: cattrs.Converter) -> Callable[[Any], Any]:
    """A shape whose ``unless_sent`` fields are None is shown without them."""
    omitted: dict[str, Any] = {
        field.name: override(omit_if_default=True)
        for field in attrs.fields(kind)
        if field.metadata.get(UNLESS_SENT)
    }
    return make_dict_unstructure_fn(kind, conv, **omitted)


converter.register_unstructure_hook_factory(_has_absent_fields, _omitting_absent)


@attrs.frozen
class Listing:
    """How a shape's unknown fields are refused: which names are read-only (shown by the
    API, never written) and how the list of its fields is introduced."""

    read_only: Sequence[str] = ()
    words: str = "the fields"
    fields: Sequence[str] = ()


_LISTINGS: dict[type, Listing] = {}


def listing(
    read_only: Sequence[str] = (), words: str = "the fields", fields: Sequence[str] = ()
) -> Callable[[Any], Any]:
    """Class decorator: refuse the shape's unknown fields with these ``read_only`` names
    and ``words`` before the list of its ``fields`` (default: the shape's own)."""

    def register(shape: Any) -> Any:
        _LISTINGS[shape] = Listing(tuple(read_only), words, tuple(fields))
        return shape

    return register


def refusal(message: str) -> dict[str, str]:
    """Field metadata: what to tell a caller who sent this field with another JSON type
    (or without it, when it is required)."""
    return {REFUSAL: message}


def unless_sent(check: Callable[[Any], Any] | None = None, refused: str = "") -> Any:
    """An attrs field of a PATCH body: None stands for "not sent" (leave it as it is), so
    a JSON null is refused like any other wrong type, and the schema does not admit null.
    In a response, likewise: a None field is left out (``MemoryItem.similarity``).
    ``check`` checks (and may normalise) a value that was sent; ``refused``: as
    ``refusal``."""
    metadata = {UNLESS_SENT: True, **(refusal(refused) if refused else {})}
    return attrs.field(
        default=None, converter=None if check is None else sent(check), metadata=metadata
    )


def sent(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``check`` as a converter of a field whose None means "not sent"."""
    return lambda value: None if value is None else check(value)


def structure_body(body: Mapping[str, Any], shape: type[Shape]) -> Shape:
    """``body`` as ``shape``; InvalidInput naming the first field at fault otherwise
    (unknown fields first, then the fields in the shape's order)."""
    try:
        shaped = converter.structure(body, shape)
    except cattrs.BaseValidationError as error:
        raise _refusal(error, body, shape) from None
    for field in attrs.fields(shape):  # type: ignore[arg-type]
        if field.metadata.get(UNLESS_SENT) and field.name in body and body[field.name] is None:
            raise InvalidInput(field.name, _words(shape, field, missing=False))
    return shaped


def refuse_unknown(given: Iterable[str], shape: type) -> None:
    """InvalidInput naming every field of ``given`` that ``shape`` does not have, listing
    the ones it has (a form's fields, say, which are not structured)."""
    how = _LISTINGS.get(shape, Listing())
    names = how.fields or [field.name for field in attrs.fields(shape)]
    refuse_unknown_fields(given, names, how.read_only, listing=how.words)


def _refusal(error: cattrs.BaseValidationError, body: Mapping[str, Any], shape: type) -> Exception:
    causes = list(_causes(error))
    for cause, _ in causes:
        if isinstance(cause, ForbiddenExtraKeysError):
            try:
                refuse_unknown(body, shape)
            except InvalidInput as refused:
                return refused
    for cause, field in causes:
        if isinstance(cause, InvalidInput):
            return cause
        if field is not None:
            return InvalidInput(field[1].name, _words(*field, missing=isinstance(cause, KeyError)))
    return InvalidInput("body", str(error))


def _causes(error: BaseException) -> Iterator[tuple[BaseException, Any]]:
    """Each exception under ``error`` with the (shape, attrs field) it arose in; None
    when it arose in no field (an unknown field, or a rule run by the shape's __init__)."""
    for cause in getattr(error, "exceptions", ()):
        notes = getattr(cause, "__notes__", ())
        name = next((note.name for note in notes if hasattr(note, "name")), None)
        owner = getattr(error, "cl", None)
        if name is not None and owner is not None and attrs.has(owner):
            yield cause, (owner, attrs.fields_dict(owner)[name])
        elif isinstance(cause, cattrs.BaseValidationError):
            yield from _causes(cause)
        else:
            yield cause, None


def _words(owner: type, field: Any, *, missing: bool) -> str:
    """The field's ``refusal``, or the plain words for a missing field or its type."""
    if REFUSAL in field.metadata:
        return str(field.metadata[REFUSAL])
    if missing:
        return "is required"
    kind, _ = field_schema(typing.get_type_hints(owner, include_extras=True)[field.name])
    kind = without_none(kind)
    return PLAIN_WORDS.get(typing.get_origin(kind) or kind, "is not valid")
