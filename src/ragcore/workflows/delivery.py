"""When to try a workflow call again: the retry policy as a pure function.

A call is tried at most ``1 + max_retries`` times. Only failures that may pass are tried
again: no answer in time, a connection that failed (the receiver restarting), 408, 429
and 5xx. Another status (a 4xx, a redirect, which is never followed) would fail the same
way again, and a target the address rules refuse is never sent anything. The wait
doubles from ``backoff_seconds``; a ``Retry-After`` the receiver sends is honoured when
it is within ``max_retry_after_seconds``, and beyond that the call is given up rather
than sent before the receiver asked.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import attrs

RETRIED_STATUSES = frozenset({408, 429})


@attrs.frozen
class RetryPolicy:
    timeout_seconds: float = 10.0  # each attempt, connecting to the last byte of the headers
    max_retries: int = 2
    backoff_seconds: float = 1.0  # before the first retry; doubled before each next one
    max_retry_after_seconds: float = 60.0
    concurrency: int = 4  # calls in flight at once for one reply


@attrs.frozen
class Outcome:
    """How one attempt ended: an HTTP ``status``, or none (``timed_out``, or the connection
    failed, ``failure`` saying how); ``retry_after`` is the response's Retry-After header,
    if any. ``refused``: the address rules refused the target, so nothing was sent, and
    nothing will be on a retry."""

    status: int | None = None
    timed_out: bool = False
    retry_after: str | None = None
    refused: str | None = None
    failure: str | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        if self.refused is not None:
            return False
        if self.status is None:
            return True
        return self.status in RETRIED_STATUSES or 500 <= self.status < 600

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


def next_delay(policy: RetryPolicy, attempts: int, outcome: Outcome, now: datetime) -> float | None:
    """Seconds to wait before the next attempt, after ``attempts`` attempts of which
    ``outcome`` was the last; None when done (delivered, not worth retrying, out of
    retries, or a Retry-After beyond the bound)."""
    if outcome.delivered or not outcome.retryable or attempts > policy.max_retries:
        return None
    backoff = policy.backoff_seconds * 2.0 ** (attempts - 1)
    if outcome.retry_after is None:
        return backoff
    asked = retry_after_seconds(outcome.retry_after, now)
    if asked is None:
        return backoff
    if asked > policy.max_retry_after_seconds:
        return None
    return asked


def retry_after_seconds(value: str, now: datetime) -> float | None:
    """A Retry-After header in seconds from ``now`` (delay-seconds or an HTTP date; a date
    in the past is 0), or None when it is neither."""
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())
