"""The business's opening hours, as the owner writes them in the profile:
``Mon-Fri 09:00-17:00; Sat 10:00-14:00`` — days (``Mon`` … ``Sun``, full names too, in
any case; a range with ``-``, several with ``,``) then one or more time spans (``9-17``,
``09:00-12:30, 13:30-18:00``; a span past midnight, ``22:00-02:00``, ends the next day; one
that ends when it starts is the whole day), entries separated by ``;`` or new lines. Days
not named are closed.

``HOURS`` is the grammar as a pattern (the schema's, and the check's), so what the API
documents is exactly what it takes. Read in the profile's time zone: the service gives
the local time (``is_open`` takes it), so nothing here needs a clock.
"""

from __future__ import annotations

import re
from datetime import datetime

import attrs

from ragcore.errors import InvalidInput

FIELD = "opening_hours"
EXAMPLE = "Mon-Fri 09:00-17:00; Sat 10:00-14:00"
_DAY_WORDS = {
    "mon": ("monday",),
    "tue": ("tues", "tuesday"),
    "wed": ("wednesday",),
    "thu": ("thur", "thurs", "thursday"),
    "fri": ("friday",),
    "sat": ("saturday",),
    "sun": ("sunday",),
}
_DAY_INDEX = {
    word: index
    for index, (short, longer) in enumerate(_DAY_WORDS.items())
    for word in (short, *longer)
}


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c}]" for c in word)


_SP = "[ \\t]*"
_DAY = "(?:" + "|".join(_any_case(w) for w in sorted(_DAY_INDEX, key=len, reverse=True)) + ")"
_DAY_RANGE = f"{_DAY}(?:{_SP}-{_SP}{_DAY})?"
_DAYS = f"{_DAY_RANGE}(?:{_SP},{_SP}{_DAY_RANGE})*"
_TIME = "(?:24(?::00)?|(?:[01]?[0-9]|2[0-3])(?::[0-5][0-9])?)"
_SPAN = f"{_TIME}{_SP}-{_SP}{_TIME}"
_ENTRY = f"{_SP}(?:{_DAYS}[ \\t]+{_SPAN}(?:{_SP},{_SP}{_SPAN})*{_SP})?"
#: opening hours as a pattern: what ``parse_hours`` reads (blank: none known)
HOURS = f"^{_ENTRY}(?:[;\\n\\r]{_ENTRY})*$"
_HOURS = re.compile(HOURS)
_TIMES = re.compile(r"(\d{1,2})(?::(\d{2}))?")


@attrs.frozen
class Span:
    """Open on ``day`` (0 Monday) from ``start`` to ``end``, minutes after midnight;
    ``end`` past 1440 runs into the next day."""

    day: int
    start: int
    end: int


@attrs.frozen
class OpeningHours:
    spans: tuple[Span, ...] = ()
    text: str = ""

    @property
    def known(self) -> bool:
        return bool(self.spans)


def check_hours(text: str) -> str:
    """``text`` as the profile keeps it; InvalidInput naming ``opening_hours`` when it is
    not opening hours."""
    if not _HOURS.match(text):
        raise InvalidInput(
            FIELD, f"opening_hours must be days then hours, like {EXAMPLE!r}; got {text[:80]!r}"
        )
    return text.strip()


def parse_hours(text: str) -> OpeningHours:
    """``text`` read as opening hours (blank: none known); InvalidInput as ``check_hours``."""
    check_hours(text)
    spans: list[Span] = []
    for entry in re.split(r"[;\n\r]", text):
        entry = entry.strip()
        if not entry:
            continue
        first_digit = next(i for i, c in enumerate(entry) if c.isdigit())
        days = _days(entry[:first_digit])
        for span in entry[first_digit:].split(","):
            start, end = (_minutes(t) for t in span.split("-"))
            if end <= start:  # past midnight; the same time: the whole day
                end += 1440
            spans += [Span(day, start, end) for day in days]
    return OpeningHours(tuple(spans), " ".join(text.split()) if spans else "")


def is_open(hours: OpeningHours, local: datetime) -> bool:
    """Whether the business is open at ``local`` (its own time zone's wall time)."""
    minute = local.hour * 60 + local.minute
    today = local.weekday()
    yesterday = (today - 1) % 7
    for span in hours.spans:
        if span.day == today and span.start <= minute < span.end:
            return True
        if span.day == yesterday and span.end > 1440 and minute < span.end - 1440:
            return True
    return False


def _days(text: str) -> list[int]:
    days: list[int] = []
    for part in "".join(text.split()).lower().split(","):
        first, _, last = part.partition("-")
        a = _DAY_INDEX[first]
        b = _DAY_INDEX[last] if last else a
        days += [(a + i) % 7 for i in range((b - a) % 7 + 1)]
    return days


def _minutes(text: str) -> int:
    match = _TIMES.fullmatch(text.strip())
    assert match is not None  # the pattern let only times through
    return int(match.group(1)) * 60 + int(match.group(2) or 0)
