"""The rating of a turn's answer: up, down, or null to take it back; nothing else. A
rating may come with a comment (at most 1,000 characters, stripped, blank is none); a
comment with null is refused, in the service as in the schema."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from ragcore.api.conversations import (
    COMMENT_WITHOUT_RATING,
    MAX_COMMENT_CHARS,
    RATING_REFUSAL,
    TurnFeedback,
    turn_number,
)
from ragcore.api.widget import WidgetFeedback
from ragcore.converter import structure_body
from ragcore.errors import InvalidInput
from ragcore.schema import Schemas


@pytest.mark.parametrize("rating", ["up", "down", None])
def test_up_down_and_null_are_ratings(rating):
    assert structure_body({"rating": rating}, TurnFeedback).rating == rating


@pytest.mark.parametrize("body", [{"rating": "sideways"}, {"rating": "Up"}, {"rating": 1}, {}])
def test_anything_else_is_refused_naming_the_ratings(body):
    with pytest.raises(InvalidInput) as refused:
        structure_body(body, TurnFeedback)
    assert (refused.value.field, refused.value.message) == ("rating", RATING_REFUSAL)


def test_an_unknown_field_is_refused():
    with pytest.raises(InvalidInput) as refused:
        structure_body({"rating": "up", "remark": "great"}, TurnFeedback)
    assert refused.value.field == "remark"


def body_of(shape, **fields):
    """A body of ``shape``: the widget's names the turn too."""
    return {"turn": 1, **fields} if shape is WidgetFeedback else fields


@pytest.mark.parametrize("shape", [TurnFeedback, WidgetFeedback])
@pytest.mark.parametrize(
    ("comment", "kept"),
    [
        ("  Wrong opening hours.\n", "Wrong opening hours."),
        ("x" * MAX_COMMENT_CHARS, "x" * MAX_COMMENT_CHARS),
        ("   ", None),
        ("", None),
        (None, None),
    ],
)
def test_a_rating_may_come_with_a_comment_stripped_and_blank_is_none(shape, comment, kept):
    given = structure_body(body_of(shape, rating="down", comment=comment), shape)
    assert (given.rating, given.comment) == ("down", kept)


@pytest.mark.parametrize("shape", [TurnFeedback, WidgetFeedback])
@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"rating": None, "comment": "never mind"}, COMMENT_WITHOUT_RATING),
        ({"rating": "up", "comment": "x" * (MAX_COMMENT_CHARS + 1)}, "has 1001 characters"),
        ({"rating": "up", "comment": 5}, "must be text"),
    ],
)
def test_a_comment_without_a_rating_too_long_or_not_text_is_refused(shape, body, words):
    with pytest.raises(InvalidInput) as refused:
        structure_body(body_of(shape, **body), shape)
    assert refused.value.field == "comment"
    assert words in refused.value.message


@pytest.mark.parametrize("shape", [TurnFeedback, WidgetFeedback])
def test_taking_a_rating_back_with_a_blank_comment_is_no_comment(shape):
    assert structure_body(body_of(shape, rating=None, comment=" \t"), shape).comment is None


def admitted(body, shape=TurnFeedback):
    """Whether the request schema /openapi.json shows for ``shape`` admits ``body``."""
    schemas = Schemas()
    ref = schemas.body(shape)
    validator = Draft202012Validator({**ref, "components": {"schemas": schemas.components}})
    return validator.is_valid(body)


@pytest.mark.parametrize(
    "body",
    [
        {"rating": "up", "comment": "fine"},
        {"rating": "down"},
        {"rating": None},
        {"rating": None, "comment": None},
        {"rating": None, "comment": " \u3000\n"},
        {"rating": None, "comment": "no"},
        {"rating": None, "comment": " x "},
        {"rating": "up", "comment": "x" * MAX_COMMENT_CHARS},
        {"rating": "up", "comment": "x" * (MAX_COMMENT_CHARS + 1)},
        {"rating": "up", "comment": 5},
        {"comment": "fine"},
    ],
)
@pytest.mark.parametrize("shape", [TurnFeedback, WidgetFeedback])
def test_the_schema_admits_a_comment_exactly_where_the_service_does(body, shape):
    body = body_of(shape, **body)
    try:
        structure_body(body, shape)
        taken = True
    except InvalidInput:
        taken = False
    assert admitted(body, shape) is taken


@pytest.mark.parametrize(
    ("raw", "number"),
    [
        ("1", 1),
        ("42", 42),
        ("2147483647", 2**31 - 1),
        ("0", None),
        ("2147483648", None),
        ("-1", None),
        ("1.5", None),
        ("abc", None),
        ("", None),
        ("١", None),
    ],
)
def test_a_path_turn_number_is_a_positive_postgresql_integer(raw, number):
    assert turn_number(raw) == number
