"""Calls to the platforms' REST APIs (replies, the owner's notifications, set-up) are
retried by ``ragcore.retry``'s policy, tuned for a customer waiting on a reply: twice,
quickly, on timeouts, failed connections, 429 and 5xx, and a longer wait than
``MAX_WAIT_SECONDS`` that a platform asks for is cut to it rather than held."""

from __future__ import annotations

from typing import Any

from ragcore.retry import RetryPolicy

MAX_WAIT_SECONDS = 5.0  # a longer Retry-After is not worth holding a reply for
PLATFORM_RETRY = RetryPolicy(
    max_retries=2,
    backoff_seconds=0.5,  # then 2 s
    backoff_factor=4.0,
    max_retry_after_seconds=MAX_WAIT_SECONDS,
    give_up_beyond_bound=False,
    retried_statuses=frozenset({429}),
)


def asked_wait(header: str | None, body: Any) -> str | None:
    """The wait a platform asked for, as a Retry-After value: the Retry-After header when
    it reads as seconds, else Discord's ``retry_after`` or Telegram's
    ``parameters.retry_after`` in the JSON ``body`` (None when the body was not JSON)."""
    seconds = _seconds(header) if header is not None else None
    if seconds is not None:
        return str(max(seconds, 0.0))
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters")
    nested = parameters.get("retry_after") if isinstance(parameters, dict) else None
    for value in (body.get("retry_after"), nested):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(max(float(value), 0.0))
    return None


def _seconds(header: str) -> float | None:
    try:
        return float(header)
    except ValueError:
        return None
