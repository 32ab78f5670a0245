from datetime import UTC, datetime, timedelta

from ragcore.knowledge.jobs import STALE_AFTER, abandoned, abandoned_reason, ingested_as_job

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def test_only_an_upload_larger_than_the_threshold_becomes_a_job():
    assert ingested_as_job(1_048_577, 1_048_576)
    assert not ingested_as_job(1_048_576, 1_048_576)
    assert ingested_as_job(1, 0)  # 0: every upload


def test_an_unfinished_job_without_a_heartbeat_for_too_long_is_abandoned():
    long_ago = NOW - STALE_AFTER - timedelta(seconds=1)
    assert abandoned("running", long_ago, NOW)
    assert abandoned("queued", long_ago, NOW)
    assert not abandoned("running", NOW - timedelta(seconds=5), NOW)
    assert not abandoned("done", long_ago, NOW)
    assert not abandoned("failed", long_ago, NOW)


def test_the_reason_says_what_the_job_was_doing_since_when_and_what_to_do():
    reason = abandoned_reason("running", NOW)
    assert "stopped while the job was running" in reason
    assert "2026-11-24T12:00:00+00:00" in reason and "upload the file again" in reason
    assert "waiting to run" in abandoned_reason("queued", NOW)
