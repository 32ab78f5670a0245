"""ragcore.inputs: JSON read within a depth, text the database can hold."""

from __future__ import annotations

import pytest

from ragcore.errors import InvalidInput
from ragcore.inputs import (
    MAX_JSON_DEPTH,
    NestedTooDeep,
    NotJSON,
    check_text_input,
    parse_json,
)


def test_a_plain_body_is_read_as_is():
    assert parse_json(b'{"text": "caf\\u00e9 \\ud83d\\ude00", "tags": ["a"]}') == {
        "text": "café 😀",  # a surrogate pair is one character, and fine
        "tags": ["a"],
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"text": "a\\u0000b"}', "text"),
        (b'{"text": "a\\ud800b"}', "text"),
        (b'{"text": "a\\udc00"}', "text"),
        (b'{"tags": ["ok", "a\\u0000"]}', "tags[1]"),
        (b'{"message": {"chat": {"title": "\\u0000"}}}', "message.chat.title"),
        (b'["\\u0000"]', "[0]"),
        (b'"\\u0000"', "body"),
        (b'{"a\\u0000": 1}', "body"),
        (b'{"data": {"b\\ud800": 1}}', "data"),
    ],
)
def test_unstorable_text_is_refused_naming_where_it_is(body, field):
    with pytest.raises(InvalidInput) as refused:
        parse_json(body)
    assert refused.value.field == field


def test_the_first_unstorable_text_in_document_order_is_named():
    with pytest.raises(InvalidInput) as refused:
        parse_json(b'{"a": "\\u0000", "b": "\\u0000"}')
    assert refused.value.field == "a"


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 983, 200_000])
def test_nesting_beyond_the_limit_is_refused(depth):
    with pytest.raises(NestedTooDeep):
        parse_json("[" * depth + "]" * depth)
    with pytest.raises(NestedTooDeep):
        parse_json('{"a": ' * depth + "1" + "}" * depth)


def test_nesting_up_to_the_limit_is_read():
    depth = MAX_JSON_DEPTH
    assert parse_json("[" * depth + "]" * depth) is not None


@pytest.mark.parametrize("body", [b"{", b"NaN", b'{"a": Infinity}', b"\xff\xfe\x00", b""])
def test_what_is_not_json_is_not_json(body):
    with pytest.raises(NotJSON):
        parse_json(body)


def test_text_from_elsewhere_is_checked_the_same_way():
    assert check_text_input("fine", "q") == "fine"
    with pytest.raises(InvalidInput) as refused:
        check_text_input("a\x00", "question")
    assert refused.value.field == "question"
    assert "NUL" in refused.value.message
