"""Large uploads ingested in the background: which upload becomes a job, a job's states,
and when a job's process is taken for gone.

A job is ``queued`` (waiting for the one job a process runs at a time), ``running``
(reading the file, then embedding its chunks), then ``done`` or ``failed``; only those two
end it. Its process shows it alive by touching the job's heartbeat every
``HEARTBEAT_SECONDS``; an unfinished job with no heartbeat for ``STALE_AFTER`` was left
by a process that stopped (a crash, a kill), and is marked failed with ``abandoned_reason``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

JobStatus = Literal["queued", "running", "done", "failed"]
UNFINISHED: tuple[JobStatus, ...] = ("queued", "running")
HEARTBEAT_SECONDS = 10.0
STALE_AFTER = timedelta(seconds=60)
STOPPED = "the service was stopped before the job finished; upload the file again"


def ingested_as_job(size_bytes: int, threshold: int) -> bool:
    """An upload larger than INGEST_JOB_BYTES (``threshold``) is ingested as a job."""
    return size_bytes > threshold


def abandoned(
    status: str, heartbeat_at: datetime, now: datetime, stale_after: timedelta = STALE_AFTER
) -> bool:
    """True for an unfinished job whose process has shown no sign of life for too long."""
    return status in UNFINISHED and now - heartbeat_at > stale_after


def abandoned_reason(status: str, heartbeat_at: datetime) -> str:
    """Why a job left by a stopped process failed: what it was doing, and since when."""
    doing = "waiting to run" if status == "queued" else "running"
    return (
        f"the service stopped while the job was {doing} (no sign of life since "
        f"{heartbeat_at.isoformat(timespec='seconds')}); upload the file again"
    )
