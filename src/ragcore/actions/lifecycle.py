"""The action lifecycle, h11-style: every status change an action can make is one row of
``TRANSITIONS``, and nothing changes a status any other way.

An action starts ``refused`` (the settings or the gate said no), ``pending`` (held for
the owner) or ``executing`` (sent at once). A pending action is approved (then sent),
rejected, or expires; a send ends ``executed`` or ``failed``, and one cut off by a stop
is ``failed`` too (``interrupted``). The event names are the ones the action log shows.

The store applies a ``Move`` only to an action still in its ``before`` status (a
conditional UPDATE), so of two deciders racing on one action exactly one wins.
"""

from __future__ import annotations

import attrs

NEW = "new"  # not yet stored: never a status an action is shown in
STATUSES = ("refused", "pending", "executing", "executed", "failed", "rejected", "expired")
FINAL = frozenset({"refused", "executed", "failed", "rejected", "expired"})

#: (status before, event) -> status after
TRANSITIONS: dict[tuple[str, str], str] = {
    (NEW, "refused"): "refused",
    (NEW, "held"): "pending",
    (NEW, "allowed"): "executing",
    ("pending", "approved"): "executing",
    ("pending", "rejected"): "rejected",
    ("pending", "expired"): "expired",
    ("executing", "executed"): "executed",
    ("executing", "failed"): "failed",
    ("executing", "interrupted"): "failed",
}


class IllegalTransition(Exception):
    """A status change the lifecycle does not have: a bug in the caller, never input."""


@attrs.frozen
class Move:
    """One row of ``TRANSITIONS``: from ``before`` on ``event`` to ``after``."""

    before: str
    event: str
    after: str

    @property
    def final(self) -> bool:
        """The action is done after this move: nothing changes it again."""
        return self.after in FINAL


def move(before: str, event: str) -> Move:
    """The move ``event`` makes from ``before``; IllegalTransition when there is none."""
    try:
        return Move(before, event, TRANSITIONS[before, event])
    except KeyError:
        raise IllegalTransition(f"an action cannot go from {before} on {event}") from None


#: the moves the service makes without anyone deciding: on expiry, and after a stop
EXPIRE = move("pending", "expired")
INTERRUPT = move("executing", "interrupted")
