"""Errors a rule raises about its input; the runners turn them into replies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class InvalidInput(ValueError):
    """The caller sent something we cannot use; ``field`` names it, the message says why."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class TooLarge(InvalidInput):
    """The input is more than the service takes in one go (HTTP 413); the message says
    which limit, and what to do instead."""


def refuse_unknown_fields(
    given: Iterable[str],
    fields: Sequence[str],
    read_only: Sequence[str] = (),
    *,
    listing: str = "the fields",
) -> None:
    """InvalidInput naming every field of ``given`` that is not one of ``fields`` (those
    in ``read_only`` as read-only), then listing ``fields``: a misspelt or read-only field
    is refused by name, never ignored."""
    unknown = sorted(set(given) - set(fields))
    if not unknown:
        return
    other = [name for name in unknown if name not in read_only]
    fixed = [name for name in unknown if name in read_only]
    reasons = []
    if other:
        reasons.append(f"unknown field(s) {', '.join(other)}")
    if fixed:
        reasons.append(f"read-only field(s) {', '.join(fixed)}")
    raise InvalidInput(", ".join(unknown), f"{'; '.join(reasons)}; {listing}: {', '.join(fields)}")


def check_text(value: Any, field: str, limit: int) -> str:
    """``value`` as a text field: not blank, at most ``limit`` characters as sent (the
    schema's ``maxLength``), then stripped; InvalidInput naming ``field`` otherwise."""
    if not isinstance(value, str):
        raise InvalidInput(field, "must be text")
    text = value.strip()
    if not text:
        raise InvalidInput(field, "must not be blank")
    if len(value) > limit:
        raise InvalidInput(field, f"has {len(value)} characters; the limit is {limit}")
    return text
