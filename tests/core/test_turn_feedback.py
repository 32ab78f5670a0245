"""The rating of a turn's answer: up, down, or null to take it back; nothing else."""

from __future__ import annotations

import pytest

from ragcore.api.conversations import RATING_REFUSAL, TurnFeedback, turn_number
from ragcore.converter import structure_body
from ragcore.errors import InvalidInput


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
        structure_body({"rating": "up", "comment": "great"}, TurnFeedback)
    assert refused.value.field == "comment"


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
