"""The patterns /openapi.json shows are the rules the service checks: text each pattern
admits is taken by its rule, and text the rule takes matches the pattern (the fuzzing
test in tests/io checks the same through the served document and the live service)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcore.actions.approvals import ID_TEXT, normalize_id
from ragcore.actions.autonomy import TARGET_SCHEMAS, normalize_target
from ragcore.actions.kinds import (
    RECIPIENT,
    SUBJECT,
    TARGET_TEXT,
    check_recipient,
    check_subject,
    check_target,
)
from ragcore.api.chat import CONVERSATION_ID_QUERY, query_conversation_id
from ragcore.api.integrations import INTERVAL_TEXT, upload_body
from ragcore.employees.memory import TAGS_QUERY, parse_tags
from ragcore.employees.profile import LANGUAGE, check_profile_patch
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import (
    NOT_BLANK,
    SPACE,
    STORABLE,
    check_text_input,
    number_pattern,
    whole_number,
)
from ragcore.integrations.kinds import check_new
from ragcore.schema import Schemas
from ragcore.workflows.definitions import URL_PATTERN, check_webhook_url

EXAMPLES = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
#: text of every kind, blank space, controls and the characters of the rules included
TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000,;:@.-+_#/?0aZß"),
    ),
    max_size=24,
)


def takes(rule: Callable[[str], Any], text: str) -> bool:
    """Whether the service takes ``text``: storable, as every input is checked where it
    is read (``check_text_input``), and taken by ``rule``."""
    try:
        return rule(check_text_input(text, "field")) is not None
    except InvalidInput:
        return False


def assert_same(pattern: str, rule: Callable[[str], Any], text: str) -> None:
    assert bool(re.fullmatch(pattern, text)) == takes(rule, text), repr(text)


def test_blank_space_is_what_strip_removes_and_nothing_else():
    for code in range(0x10000):
        char = chr(code)
        if not 0xD800 <= code < 0xE000:
            assert bool(re.fullmatch(f"[{SPACE}]", char)) == (char.strip() == ""), hex(code)


def test_a_word_is_a_letter_or_a_digit_as_str_isalnum_says():
    """HAS_WORD reads [\\p{L}\\p{N}]: Unicode's letters and numbers, which is isalnum."""
    for code in range(0x110000):
        char = chr(code)
        if not 0xD800 <= code < 0xE000:
            assert char.isalnum() == (unicodedata.category(char)[0] in "LN"), hex(code)


@EXAMPLES
@given(st.one_of(TEXT, st.from_regex(NOT_BLANK, fullmatch=True)))
def test_not_blank_is_check_texts_rule(text):
    assert_same(NOT_BLANK, lambda value: check_text(value, "field", 100), text[:100])


@pytest.mark.parametrize(
    "pattern, rule",
    [
        (TAGS_QUERY, lambda text: parse_tags(text) if text else ()),
        (ID_TEXT, normalize_id),
        (TARGET_TEXT, check_target),
        (RECIPIENT, check_recipient),
        (SUBJECT, check_subject),
        (LANGUAGE, lambda text: check_profile_patch({"language": text})),
        (CONVERSATION_ID_QUERY, lambda text: query_conversation_id(text) or 0),
        (INTERVAL_TEXT, lambda text: _interval(text)),
    ],
    ids=["tags", "action id", "target", "recipient", "subject", "language", "id", "interval"],
)
@EXAMPLES
@given(data=st.data())
def test_each_pattern_takes_what_its_rule_takes(pattern, rule, data):
    text = data.draw(st.one_of(TEXT, st.from_regex(pattern, fullmatch=True)))
    assert_same(pattern, rule, text)


def _interval(text: str) -> Any:
    body = upload_body({"name": "crm", "sync_interval_minutes": text}, "email\na@x.io\n")
    return check_new(body)


@pytest.mark.parametrize("channel", sorted(TARGET_SCHEMAS))
@EXAMPLES
@given(data=st.data())
def test_an_owner_target_pattern_is_its_channels_rule(channel, data):
    pattern = TARGET_SCHEMAS[channel]["pattern"]
    text = data.draw(st.one_of(TEXT, st.from_regex(pattern, fullmatch=True)))
    assert_same(pattern, lambda value: normalize_target(channel, value), text)


@EXAMPLES
@given(st.from_regex(URL_PATTERN, fullmatch=True))
def test_a_url_of_the_pattern_is_one_check_webhook_url_takes(url):
    """The pattern shows the URLs most use; the rule takes more (an IPv6 address, an
    internationalised name), never less."""
    check_webhook_url(url[:2048])


def test_number_patterns_are_the_ranges_written_without_leading_zeros():
    for low, high in [(0, 0), (1, 9), (1, 65535), (7, 1234), (0, 255), (1, 10080)]:
        pattern = number_pattern(low, high)
        for number in range(0, 70000):
            assert bool(re.fullmatch(pattern, str(number))) == (low <= number <= high)
        assert not re.fullmatch(pattern, "007")


def test_a_whole_number_is_an_integer_or_a_float_without_a_fraction():
    assert [whole_number(v) for v in (5, 5.0, -3.0, 2.5, True, "5", None)] == [
        5, 5, -3, None, None, None, None,
    ]  # fmt: skip


def test_every_text_of_a_request_says_it_holds_no_nul():
    schemas = Schemas()
    body = schemas.request(
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "data": {"type": "object"}},
            "additionalProperties": False,
        }
    )
    assert body["properties"]["name"]["pattern"] == STORABLE
    assert body["properties"]["data"]["propertyNames"] == {"pattern": STORABLE}
    assert body["properties"]["data"]["additionalProperties"] == {
        "$ref": "#/components/schemas/StorableJSON"
    }
    assert not re.fullmatch(STORABLE, "a\x00b") and re.fullmatch(NOT_BLANK, " a ")
