"""A request body takes one path into its shape: the shared converter, which takes JSON
types as they are and words every refusal as the API does."""

from __future__ import annotations

from typing import Annotated

import attrs
import pytest

from ragcore.actions.kinds import ChatopsAction, check_action
from ragcore.api.chat import ChatQuestion
from ragcore.api.documents import NewDocument
from ragcore.api.employees import MemoryItem
from ragcore.converter import converter, listing, refusal, structure_body
from ragcore.employees import memory
from ragcore.employees.editing import EmployeePatch
from ragcore.errors import InvalidInput
from ragcore.schema import described


@listing(read_only=("id",), words="the fields you can change")
@attrs.frozen
class Sample:
    name: Annotated[str, described(maxLength=10)]
    count: int = 1
    ratio: float = 0.5
    on: bool = True
    tags: list[str] = attrs.field(factory=list)
    note: str = attrs.field(default="", metadata=refusal("must be a short note"))


def refused(body: object, shape: type = Sample) -> tuple[str, str]:
    with pytest.raises(InvalidInput) as error:
        structure_body(body, shape)  # type: ignore[arg-type]
    return error.value.field, error.value.message


def test_json_types_are_taken_as_they_are():
    shaped = structure_body({"name": "a", "count": 2, "ratio": 1, "on": False}, Sample)
    assert shaped == Sample("a", 2, 1, False)
    assert refused({"name": 5}) == ("name", "must be text")
    assert refused({"name": "a", "count": "2"}) == ("count", "must be a whole number")
    assert refused({"name": "a", "count": True}) == ("count", "must be a whole number")
    assert refused({"name": "a", "ratio": "1"}) == ("ratio", "must be a number")
    assert refused({"name": "a", "on": 1}) == ("on", "must be true or false (a JSON boolean)")
    assert refused({"name": "a", "tags": ["x", 1]}) == ("tags", "must be a list")
    assert refused({"name": "a", "tags": "xy"}) == ("tags", "must be a list")


def test_a_field_says_what_to_send_in_its_own_words():
    assert refused({"name": "a", "note": 3}) == ("note", "must be a short note")
    assert refused({}) == ("name", "is required")


def test_unknown_fields_are_refused_first_by_name_listing_the_shape():
    assert refused({"name": 5, "id": 1, "colour": "red"}) == (
        "colour, id",
        "unknown field(s) colour; read-only field(s) id; the fields you can change: name, "
        "count, ratio, on, tags, note",
    )


def test_the_rules_a_shape_runs_raise_their_own_refusal():
    assert refused({"question": "   "}, ChatQuestion) == ("question", "must not be blank")
    assert refused({"question": "hi", "user": 7}, ChatQuestion) == (
        "user",
        "must be text naming the end user, when given",
    )
    assert structure_body({"question": " hi "}, ChatQuestion) == ChatQuestion("hi")
    assert refused({"text": "x"}, NewDocument) == (
        "name",
        "is required: a non-blank document name",
    )


def test_a_patch_field_not_sent_is_none_and_null_is_refused():
    assert structure_body({"autonomy": "semi"}, EmployeePatch).given() == {"autonomy": "semi"}
    assert refused({"display_name": None}, EmployeePatch) == ("display_name", "must be text")
    assert refused({"autonomy": None}, EmployeePatch) == (
        "autonomy",
        "must be one of: off, semi, full",
    )


def test_an_action_is_structured_into_its_kind_and_refused_in_its_words():
    assert check_action({"kind": "chatops", "text": " hi "}) == ChatopsAction("hi")
    with pytest.raises(InvalidInput) as error:
        check_action({"kind": "webhook", "target": "crm", "to": "a@b.example"})
    assert (error.value.field, error.value.message) == (
        "to",
        "unknown field(s) to; a webhook action's fields: kind, target, data",
    )
    with pytest.raises(InvalidInput) as error:
        check_action({"kind": "email", "to": "a@b.example", "subject": "s"})
    assert (error.value.field, error.value.message) == ("body", "must be text")
    with pytest.raises(InvalidInput) as error:
        check_action({"kind": "webhook", "target": "crm", "data": [1]})
    assert (error.value.field, error.value.message) == ("data", "must be a JSON object")


def test_a_memory_item_shows_its_similarity_only_when_searched():
    stored = memory.MemoryItem(1, "sales", "Quote in euros.", ("pricing",), "owner", 3)
    shown = converter.unstructure(MemoryItem.of(stored))
    assert "similarity" not in shown and shown["tags"] == ["pricing"]
    searched = attrs.evolve(stored, similarity=0.123456)
    assert converter.unstructure(MemoryItem.of(searched))["similarity"] == 0.1235
