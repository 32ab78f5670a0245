"""Errors a rule raises about its input; the runners turn them into replies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class InvalidInput(ValueError):
    """The caller sent something we cannot use; ``field`` names it, the message says why."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


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
