"""A text searched for is found as written: LIKE's wildcards and its escape character in
it are plain characters."""

from __future__ import annotations

import re

import pytest

from ragcore.api.queries import contains_pattern


def like(pattern: str, text: str) -> bool:
    """PostgreSQL's ILIKE with its default escape (backslash), for the test."""
    regex, chars = "", iter(pattern)
    for char in chars:
        if char == "\\":
            regex += re.escape(next(chars))
        elif char == "%":
            regex += ".*"
        elif char == "_":
            regex += "."
        else:
            regex += re.escape(char)
    return re.fullmatch(regex, text, re.IGNORECASE | re.DOTALL) is not None


def test_a_blank_search_is_no_filter():
    assert contains_pattern("") is None


@pytest.mark.parametrize(
    ("searched", "found", "not_found"),
    [
        ("Refund", "refunds.md", "returns.md"),
        ("50%", "a 50% discount", "a 500 discount"),
        ("a_b", "file a_b.txt", "file axb.txt"),
        ("c:\\x", "path c:\\x\\y", "path c:x"),
    ],
)
def test_the_text_is_found_as_written(searched, found, not_found):
    pattern = contains_pattern(searched)
    assert pattern is not None
    assert like(pattern, found)
    assert not like(pattern, not_found)
