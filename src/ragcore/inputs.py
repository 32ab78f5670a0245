"""What every input must be before a rule sees it: JSON within a fixed nesting depth,
and text that storage can hold.

PostgreSQL's text cannot hold NUL (U+0000), and a lone surrogate (U+D800 to U+DFFF,
which JSON's ``"\\ud800"`` escape produces) cannot be encoded as UTF-8: either fails
only when it is stored, after other work was done, as a 500. So both are refused where
input is read, naming where they are, before anything runs. JSON nested deeper than
``MAX_JSON_DEPTH`` is refused too: no body of ours needs more than a few levels, and
the json module recurses, so a 2 KB body of brackets would otherwise raise
RecursionError.

``parse_json`` is what every JSON body goes through (the API's and the webhooks');
``check_text_input`` is for text that arrives otherwise (query parameters, path
segments, form fields, text read from a file).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragcore.errors import InvalidInput

MAX_JSON_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def character_class(codes: list[int]) -> str:
    """The code points ``codes`` (ascending) as the inside of a regular expression's
    character class, runs as ranges, each end a ``\\uXXXX`` escape (read alike by
    Python and ECMA-262, the dialect of JSON Schema)."""
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])

    def one(code: int) -> str:
        return chr(code) if chr(code).isascii() and chr(code).isalnum() else f"\\u{code:04x}"

    return "".join(
        one(first) if first == last else f"{one(first)}-{one(last)}" for first, last in runs
    )


#: the characters ``str.strip()`` removes and ``str.isspace()`` sees (all in the BMP), as
#: a character class's inside: a pattern's ``\\s`` means another set in every dialect
SPACE = character_class([code for code in range(0x10000) if chr(code).isspace()])
#: text storage can hold, as a JSON Schema pattern: no NUL. (A lone surrogate cannot be
#: stored either, but no JSON Schema tool reads one: their strings are UTF-8.)
STORABLE = "^[^\\u0000]*$"
#: storable text with a character that is not blank (``check_text``'s "not blank")
NOT_BLANK = f"^[^\\u0000]*[^\\u0000{SPACE}][^\\u0000]*$"
#: storable text with a letter or a digit in it (``str.isalnum``: Unicode's L and N)
HAS_WORD = "^[^\\u0000]*[\\p{L}\\p{N}][^\\u0000]*$"


def whole_number(value: Any) -> int | None:
    """``value`` as a whole number, or None when it is none: JSON has one number type, so
    ``5.0`` is 5 (as JSON Schema's ``integer`` says), while ``true`` and ``"5"`` are not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def number_pattern(low: int, high: int) -> str:
    """A regular expression (unanchored, a group) for the decimal numbers from ``low`` to
    ``high`` (``0 <= low <= high``), written without leading zeros."""
    options = ["0"] if low == 0 else []
    start = max(low, 1)
    while start <= high:
        power = 0  # the block [start, start + 10**power) of the numbers after a prefix
        while start % 10 ** (power + 1) == 0 and start + 10 ** (power + 1) - 1 <= high:
            power += 1
        end = start + 10**power - 1
        last = (start // 10 ** (power + 1) + 1) * 10 ** (power + 1) - 1
        while end + 10**power <= min(high, last):
            end += 10**power
        first, final = str(start), str(end)
        at = len(first) - power - 1
        digit = first[at] if first[at] == final[at] else f"[{first[at]}-{final[at]}]"
        tail = "" if not power else "[0-9]" if power == 1 else f"[0-9]{{{power}}}"
        options.append(first[:at] + digit + tail)
        start = end + 1
    return "(?:" + "|".join(options) + ")"


_LABEL = "[A-Za-z0-9-]{1,63}"
#: a host: a name whose last label begins with a letter, or an IPv4 address
HOST = f"(?:(?:{_LABEL}\\.)*[A-Za-z][A-Za-z0-9-]{{0,62}}\\.?|(?:[0-9]{{1,3}}\\.){{3}}[0-9]{{1,3}})"


def http_url_pattern() -> str:
    """An http(s) URL as a pattern: http or https (any case), a ``HOST``, an optional port,
    then a path, query or fragment without spaces or control characters; spaces around
    it are dropped by the checks that use it."""
    port = number_pattern(0, 65535)
    return (
        f"^[{SPACE}]*[Hh][Tt][Tt][Pp][Ss]?://{HOST}(?::{port})?"
        f"(?:[/?#][^{SPACE}\\u0000-\\u001f\\u007f]*)?[{SPACE}]*$"
    )


def blank_or(pattern: str) -> str:
    """``pattern`` (anchored at both ends), or the empty text."""
    return f"^(?:{pattern.removeprefix('^').removesuffix('$')})?$"


class NotJSON(ValueError):
    """The bytes are not a JSON text; the message says where it went wrong."""


class NestedTooDeep(ValueError):
    """JSON nested beyond MAX_JSON_DEPTH (HTTP 413: the body is more than we take)."""

    def __init__(self, limit: int = MAX_JSON_DEPTH):
        self.limit = limit
        super().__init__(f"the JSON is nested more than {limit} levels deep")


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None when it can."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored: remove it"
    if _SURROGATE.search(text):
        return (
            "contains a lone surrogate (\\ud800-\\udfff), which is not a character: send the "
            "character itself, or both halves of its surrogate pair"
        )
    return None


def check_text_input(text: str, field: str) -> str:
    """``text`` unchanged; InvalidInput naming ``field`` when it cannot be stored."""
    reason = unstorable(text)
    if reason is not None:
        raise InvalidInput(field, reason)
    return text


def parse_json(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``data`` parsed as JSON, every string in it (keys too) storable, nested at most
    ``max_depth`` levels. Raises NotJSON, NestedTooDeep, or InvalidInput naming the field
    (``text``, ``tags[2]``, ``message.chat.title``) that holds unstorable text.
    ``NaN`` and ``Infinity`` are not JSON and are refused."""
    try:
        value = json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise NestedTooDeep(max_depth) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise NotJSON(str(error)) from None
    check_json_value(value, max_depth)
    return value


def check_json_value(value: Any, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Walk a parsed JSON value without recursion: NestedTooDeep beyond ``max_depth``
    levels, InvalidInput naming the first string (in document order) that cannot be stored."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            check_text_input(item, path or "body")
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise NestedTooDeep(max_depth)
            if isinstance(item, dict):
                children = []
                for key, child in item.items():
                    inner = f"{path}.{key}" if path else key
                    if (reason := unstorable(key)) is not None:
                        raise InvalidInput(path or "body", f"has a field name that {reason}")
                    children.append((child, inner, depth + 1))
            else:
                children = [(child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item)]
            stack.extend(reversed(children))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
