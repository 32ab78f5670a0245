"""How the platforms' REST APIs are retried: quickly, and a long wait they ask for is
cut short rather than holding a customer's reply."""

from __future__ import annotations

import pytest

from ragcore.channels.retries import MAX_WAIT_SECONDS, PLATFORM_RETRY, asked_wait
from ragcore.retry import Outcome, next_delay


@pytest.mark.parametrize("outcome", [Outcome(timed_out=True), Outcome(), Outcome(502)])
def test_passing_failures_are_tried_twice_more_after_half_a_second_then_two(outcome):
    assert next_delay(PLATFORM_RETRY, 1, outcome) == 0.5
    assert next_delay(PLATFORM_RETRY, 2, outcome) == 2.0
    assert next_delay(PLATFORM_RETRY, 3, outcome) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408])
def test_a_refusal_is_not_retried(status):
    assert next_delay(PLATFORM_RETRY, 1, Outcome(status)) is None


def test_a_rate_limit_waits_what_the_platform_asks_but_never_longer_than_the_bound():
    assert next_delay(PLATFORM_RETRY, 1, Outcome(429, retry_after="1.5")) == 1.5
    assert next_delay(PLATFORM_RETRY, 1, Outcome(429, retry_after="3600")) == MAX_WAIT_SECONDS
    assert next_delay(PLATFORM_RETRY, 3, Outcome(429, retry_after="0")) is None


def test_the_wait_asked_is_read_from_the_header_or_the_platforms_json():
    assert asked_wait("2", None) == "2.0"
    assert asked_wait("-3", None) == "0.0"
    assert asked_wait(None, {"retry_after": 0.25}) == "0.25"  # Discord
    assert asked_wait(None, {"parameters": {"retry_after": 3}}) == "3.0"  # Telegram
    assert asked_wait("soon", {"ok": False}) is None
    assert asked_wait(None, {"retry_after": True}) is None
    assert asked_wait(None, None) is None
