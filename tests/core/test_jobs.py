from datetime import UTC, datetime

import pytest

from ragcore.api.jobs import not_cancellable
from ragcore.jobs import (
    ENDED,
    FIRST_BACKOFF,
    LONGEST_BACKOFF,
    UNFINISHED,
    AfterFailure,
    JobStopped,
    after_failure,
    backoff,
    cancelled_before_start,
    gone_reason,
    may_pass,
    on_cancel,
)
from ragcore.knowledge.jobs import stopped_ingestion

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def test_the_backoff_doubles_from_the_first_and_stops_at_the_longest():
    assert [backoff(n) for n in (1, 2, 3, 4)] == [
        FIRST_BACKOFF,
        FIRST_BACKOFF * 2,
        FIRST_BACKOFF * 4,
        FIRST_BACKOFF * 8,
    ]
    assert backoff(30) == backoff(1000) == LONGEST_BACKOFF


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 507])
def test_a_failure_that_may_pass_is_retried_after_the_backoff(status):
    assert may_pass(status)
    assert after_failure(status, 1, 5, NOW) == AfterFailure(True, NOW + FIRST_BACKOFF)
    assert after_failure(status, 3, 5, NOW).run_after == NOW + FIRST_BACKOFF * 4


@pytest.mark.parametrize("status", [400, 404, 409, 413, 415, 422])
def test_a_failure_of_the_input_fails_the_job_at_once(status):
    assert not may_pass(status)
    assert after_failure(status, 1, 5, NOW).retried is False


def test_the_last_attempt_fails_the_job_whatever_the_failure():
    assert after_failure(503, 5, 5, NOW).retried is False
    assert after_failure(503, 4, 5, NOW).retried is True


def test_the_reason_names_the_process_and_since_when():
    reason = gone_reason("web-1:42:ab12", NOW)
    assert "web-1:42:ab12" in reason and "2026-11-24T12:00:00+00:00" in reason
    assert "queued again" in reason


@pytest.mark.parametrize(
    ("status", "done"),
    [
        ("queued", "cancelled"),  # at once: it never runs
        ("running", "asked"),  # it stops between two batches, wherever it runs
        ("done", "ended"),
        ("failed", "ended"),
        ("cancelled", "ended"),
    ],
)
def test_cancelling_a_job_depends_on_its_status(status, done):
    assert on_cancel(status) == done


def test_a_job_that_ended_cannot_be_cancelled_and_the_problem_names_its_state():
    problem = not_cancellable(7, "done")
    assert problem.status == 409
    assert "job 7 is done already" in problem.detail
    assert "queued or running" in problem.detail


def test_a_stopped_job_says_where_it_stopped_and_what_it_had_done():
    assert cancelled_before_start() == {"stopped": "before it started"}
    stop = JobStopped({"records_stored": 40})
    assert stop.result() == {"stopped": "between batches", "records_stored": 40}


def test_a_cancelled_ingestion_stored_nothing_of_its_document():
    done = stopped_ingestion(512, 552)
    assert (done["document"], done["chunks_embedded"], done["chunks_total"]) == (None, 512, 552)
    assert "nothing of it was stored" in done["detail"]


def test_cancelled_is_a_status_that_ends_a_job():
    assert "cancelled" in ENDED and "cancelled" not in UNFINISHED
