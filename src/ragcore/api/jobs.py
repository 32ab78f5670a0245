"""The background jobs as the API shows them (``GET /jobs``, ``GET /jobs/{id}``), and
what ``DELETE /jobs/{id}`` answers (``ragcore.jobs.on_cancel``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlencode

import attrs

from ragcore.api.problems import Problem, ProblemError
from ragcore.jobs import JobStatus
from ragcore.schema import described

MAX_JOBS_PAGE = 200
MAX_OFFSET = 1_000_000
KINDS = ("ingest", "sync", "learn", "crawl")  # ragio.registry.JOB_KINDS runs each


@attrs.frozen
class Job:
    """Work done in the background by whichever process runs jobs."""

    id: int
    kind: Annotated[
        str,
        described(
            "ingest (a large upload), sync (a data source), learn (the profile) or crawl "
            "(a website)"
        ),
    ]
    status: Annotated[
        JobStatus,
        described(
            "queued (waiting, or retrying after run_after), running, then done, failed or "
            "cancelled (DELETE /jobs/{id})"
        ),
    ]
    attempts: Annotated[int, described("attempts started so far")]
    max_attempts: int
    run_after: Annotated[datetime, described("when a queued job is due (a retry's backoff)")]
    progress_done: Annotated[int, described("units done (chunks embedded, pages fetched, …)")]
    progress_total: Annotated[int, described("units to do; 0 until known")]
    result: Annotated[
        dict[str, Any] | None,
        described(
            "once done: what the work produced; once cancelled: what it had done before "
            "it stopped (stopped: before it started, between batches, …)"
        ),
    ]
    problem: Annotated[
        Problem | None,
        described("once failed, or while retried: the last failure, as a problem+json body"),
    ]
    process: Annotated[str | None, described("the process running it (host:pid:random)")]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    cancel_requested_at: Annotated[
        datetime | None,
        described("when DELETE /jobs/{id} asked it to stop; null when nobody did"),
    ] = None


@attrs.frozen
class JobsQuery:
    limit: Annotated[int, described("jobs per page", minimum=1, maximum=MAX_JOBS_PAGE)] = 50
    offset: Annotated[
        int, described("jobs to skip (next has the next page's)", minimum=0, maximum=MAX_OFFSET)
    ] = 0
    kind: Annotated[str, described("only jobs of this kind", enum=["", *KINDS])] = ""
    status: Annotated[
        str,
        described(
            "only jobs in this status",
            enum=["", "queued", "running", "done", "failed", "cancelled"],
        ),
    ] = ""


@attrs.frozen
class Jobs:
    jobs: list[Job]
    total: Annotated[int, described("how many jobs match, on all pages")] = 0
    next: Annotated[str | None, described("the path of the next page; null on the last")] = None


def next_jobs_page(query: JobsQuery, shown: int, total: int) -> str | None:
    after = query.offset + shown
    if shown == 0 or after >= total:
        return None
    params = {"limit": str(query.limit), "offset": str(after)}
    params.update({name: value for name in ("kind", "status") if (value := getattr(query, name))})
    return "/jobs?" + urlencode(params)


def not_cancellable(job_id: int, status: str) -> ProblemError:
    """409 for ``DELETE /jobs/{id}`` of a job that has ended (``ragcore.jobs.on_cancel``)."""
    return ProblemError(
        409,
        f"job {job_id} is {status} already: only a queued or running job can be cancelled",
    )
