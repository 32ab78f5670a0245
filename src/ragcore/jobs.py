"""Background jobs: their states, when one is retried and after how long, and when the
process running one is taken for gone.

A job is ``queued`` (due at its ``run_after``), ``running`` (claimed by one process,
which touches its heartbeat every ``HEARTBEAT_SECONDS``), then ``done``, ``failed`` or
``cancelled``; only those three end it. Any process that runs jobs may claim any due
job, so a job outlives the process that queued it:

- a failure that may pass (a provider, the database or a disk that is full now: a
  problem status of 429 or 5xx) is retried after ``backoff``, until ``max_attempts``;
  any other failure (a file that cannot be read) fails the job at once;
- a running job with no heartbeat for ``STALE_AFTER`` was left by a process that
  stopped (a crash, a kill): it is queued again, its attempt counted;
- a process that stops gracefully hands its job back: queued again at once, the attempt
  not counted;
- the owner may cancel an unfinished job (``on_cancel``): a queued one is cancelled at
  once and never runs; a running one is asked to stop (the request is kept in the job's
  row, so the process running it sees it wherever it runs) and stops at its next stop
  point, between two batches, with what it had done before as its result
  (``JobStopped``). A job asked to stop that would be queued again (a retry, a process
  gone or stopping) is cancelled instead; one that ends before reaching a stop point
  ends ``done`` (its work was complete).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

import attrs

JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]
UNFINISHED: tuple[JobStatus, ...] = ("queued", "running")
ENDED: tuple[JobStatus, ...] = ("done", "failed", "cancelled")
HEARTBEAT_SECONDS = 10.0
STALE_AFTER = timedelta(seconds=60)
#: how often an idle process looks for due jobs (one queued in the same process wakes it)
POLL_SECONDS = 2.0
MAX_ATTEMPTS = 5
FIRST_BACKOFF = timedelta(seconds=5)
LONGEST_BACKOFF = timedelta(minutes=10)


def backoff(attempts: int) -> timedelta:
    """How long after its ``attempts``-th failed attempt a job is tried again: doubling
    from FIRST_BACKOFF, at most LONGEST_BACKOFF."""
    doubled: timedelta = FIRST_BACKOFF * 2 ** max(0, min(attempts - 1, 20))
    return min(doubled, LONGEST_BACKOFF)


def may_pass(status: int) -> bool:
    """A failure worth retrying, by its problem status: too many requests, or the
    service's or a provider's side (5xx)."""
    return status == 429 or status >= 500


@attrs.frozen
class AfterFailure:
    """What becomes of a job whose attempt failed: retried at ``run_after``, or failed."""

    retried: bool
    run_after: datetime | None = None


def after_failure(status: int, attempts: int, max_attempts: int, now: datetime) -> AfterFailure:
    """The attempt ``attempts`` (counted from 1) failed with a problem of ``status``."""
    if may_pass(status) and attempts < max_attempts:
        return AfterFailure(True, now + backoff(attempts))
    return AfterFailure(False)


def gone_reason(claimed_by: str | None, heartbeat_at: datetime | None) -> str:
    """Why a running job was queued again: its process went quiet."""
    since = "ever" if heartbeat_at is None else heartbeat_at.isoformat(timespec="seconds")
    return (
        f"the process running the job ({claimed_by or 'unknown'}) showed no sign of life "
        f"since {since}; the job was queued again"
    )


#: what ``DELETE /jobs/{id}`` does to a job, by its status: cancelled at once (queued),
#: asked to stop between batches (running), or nothing (it had ended)
OnCancel = Literal["cancelled", "asked", "ended"]


def on_cancel(status: str) -> OnCancel:
    """What cancelling a job in ``status`` does."""
    if status == "queued":
        return "cancelled"
    if status == "running":
        return "asked"
    return "ended"


def cancelled_before_start() -> dict[str, Any]:
    """The result of a job cancelled while queued: it never ran."""
    return {"stopped": "before it started"}


class JobStopped(Exception):  # noqa: N818 (a stop the owner asked for, not an error)
    """Raised by a job's work at a stop point once the owner asked it to stop: ``done``
    says what had been done before (stored as the cancelled job's result, after
    ``"stopped": "between batches"``)."""

    def __init__(self, done: dict[str, Any]) -> None:
        super().__init__("the job was cancelled")
        self.done = done

    def result(self) -> dict[str, Any]:
        return {"stopped": "between batches", **self.done}
