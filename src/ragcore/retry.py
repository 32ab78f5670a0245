"""When to try an outbound call again: one retry policy for every caller (workflow calls,
the platforms' REST APIs), as a pure function; ragio only sleeps and sends.

A call is tried at most ``1 + max_retries`` times. Only failures that may pass are tried
again: no answer in time, a connection that failed (the receiver restarting), the
policy's ``retried_statuses`` and 5xx. Another status (a 4xx, a redirect, which is never
followed) would fail the same way again, and a target the address rules refuse is never
sent anything. The wait grows from ``backoff_seconds`` by ``backoff_factor``; a
``Retry-After`` the receiver sends is honoured when it is within
``max_retry_after_seconds``; beyond that the call is given up rather than sent before
the receiver asked (``give_up_beyond_bound``), or only the bound is waited.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import attrs

RETRIED_STATUSES = frozenset({408, 429})
_SECONDS = re.compile(r"^[0-9]+(\.[0-9]+)?$")


@attrs.frozen
class RetryPolicy:
    timeout_seconds: float = 10.0  # each attempt, connecting to the last byte of the headers
    max_retries: int = 2
    backoff_seconds: float = 1.0  # before the first retry
    backoff_factor: float = 2.0  # the wait before each next retry, times this
    max_retry_after_seconds: float = 60.0
    give_up_beyond_bound: bool = True  # a longer Retry-After: give up, or wait the bound
    retried_statuses: frozenset[int] = RETRIED_STATUSES  # besides 5xx

    def retries(self, outcome: Outcome) -> bool:
        """Whether ``outcome`` may pass on another try."""
        if outcome.refused is not None:
            return False
        if outcome.status is None:
            return True
        return outcome.status in self.retried_statuses or 500 <= outcome.status < 600


@attrs.frozen
class Outcome:
    """How one attempt ended: an HTTP ``status``, or none (``timed_out``, or the connection
    failed, ``failure`` saying how); ``retry_after`` is the wait the receiver asked for (a
    Retry-After header: seconds or an HTTP date), if any. ``refused``: the address rules
    refused the target, so nothing was sent, and nothing will be on a retry."""

    status: int | None = None
    timed_out: bool = False
    retry_after: str | None = None
    refused: str | None = None
    failure: str | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def describe(self) -> str:
        if self.refused is not None:
            return f"refused: {self.refused}"
        if self.timed_out:
            return "no answer in time"
        if self.status is None:
            return f"could not connect ({self.failure})" if self.failure else "could not connect"
        if 300 <= self.status < 400:
            return f"HTTP {self.status} (a redirect, which is not followed)"
        return f"HTTP {self.status}"


def next_delay(
    policy: RetryPolicy, attempts: int, outcome: Outcome, now: datetime | None = None
) -> float | None:
    """Seconds to wait before the next attempt, after ``attempts`` attempts of which
    ``outcome`` was the last; None when done (delivered, not worth retrying, out of
    retries, or a Retry-After beyond a bound the policy gives up at). ``now`` reads a
    Retry-After given as an HTTP date; without it such a date counts as absent."""
    if outcome.delivered or not policy.retries(outcome) or attempts > policy.max_retries:
        return None
    backoff = policy.backoff_seconds * policy.backoff_factor ** (attempts - 1)
    if outcome.retry_after is None:
        return backoff
    asked = retry_after_seconds(outcome.retry_after, now)
    if asked is None:
        return backoff
    if asked > policy.max_retry_after_seconds:
        return None if policy.give_up_beyond_bound else policy.max_retry_after_seconds
    return asked


def retry_after_seconds(value: str, now: datetime | None) -> float | None:
    """A Retry-After in seconds from ``now`` (delay-seconds, whole or decimal, or an HTTP
    date; a date in the past is 0), or None when it is neither (or a date and no ``now``)."""
    value = value.strip()
    if value.isascii() and _SECONDS.match(value):
        return float(value)
    if now is None:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())
