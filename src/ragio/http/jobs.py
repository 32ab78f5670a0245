"""The background jobs: run beside the app when RUN_JOBS (``ragio.jobs.worker``), and
shown to the owner (``GET /jobs``, ``GET /jobs/{id}``), and cancelled by the owner
(``DELETE /jobs/{id}``)."""

from __future__ import annotations

from quart import Blueprint, current_app, request

from ragcore.api.jobs import Job, Jobs, JobsQuery, next_jobs_page, not_cancellable
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import Problem, ProblemError
from ragcore.api.queries import read_query, stored_id
from ragcore.converter import converter
from ragio.http.context import service
from ragio.http.problems import problem_for
from ragio.jobs import store
from ragio.jobs.worker import Worker
from ragio.registry import JOB_KINDS, JOB_SCHEDULES

blueprint = Blueprint("jobs", __name__)
WORKER = "ragchat.jobs.worker"
JOB_ID = {"path": {"id": {"type": "integer", "minimum": 1}}}


@blueprint.before_app_serving
async def run_jobs() -> None:
    """With RUN_JOBS, this process runs jobs too, in the app's nursery."""
    svc = service()
    if not svc.settings.run_jobs:
        return
    worker = Worker(
        svc, JOB_KINDS, problem_for, svc.settings.jobs_concurrency, schedules=JOB_SCHEDULES
    )
    current_app.extensions[WORKER] = worker
    await current_app.nursery.start(worker.run)  # type: ignore[attr-defined]


@blueprint.after_app_serving
async def stop_jobs() -> None:
    """No job is claimed any more; the running ones have the app's grace period."""
    worker: Worker | None = current_app.extensions.get(WORKER)
    if worker is not None:
        worker.stop()


def poke_worker() -> None:
    """A job was just queued: this process's worker (if it runs one) looks at once."""
    worker: Worker | None = current_app.extensions.get(WORKER)
    if worker is not None:
        worker.poke()


@blueprint.get("/jobs")
@operation(Reply(200, "A page of the jobs, newest first", Jobs), 422, query=JobsQuery)
async def list_jobs() -> Jobs:
    """The background jobs, newest first: large uploads' ingestion, data source syncs"""
    query = read_query(JobsQuery, request.args)
    found, total = await service().database.run(
        store.list_jobs, query.kind or None, query.status or None, query.limit, query.offset
    )
    return Jobs([shown(job) for job in found], total, next_jobs_page(query, len(found), total))


@blueprint.get("/jobs/<id>")
@operation(Reply(200, "The job", Job), 404, **JOB_ID)
async def get_job(id: str) -> Job:  # noqa: A002 (the path's name)
    """One job: its status, attempts, progress, then its result or its problem"""
    job_id = stored_id(id)
    job = None if job_id is None else await service().database.run(store.get_job, job_id)
    if job is None:
        raise ProblemError(404, f"no job {id[:40]!r}; GET /jobs lists them")
    return shown(job)


@blueprint.delete("/jobs/<id>")
@operation(
    Reply(200, "Cancelled at once (it was queued: it never runs)", Job),
    Reply(202, "Asked to stop: it stops between two batches (GET /jobs/{id} shows when)", Job),
    404,
    409,
    **JOB_ID,
)
async def cancel_job(id: str) -> tuple[Job, int]:  # noqa: A002 (the path's name)
    """Cancel a job: a queued one at once, a running one between two batches

    A running job may run in any process: it is asked to stop (cancel_requested_at) and
    stops at its next stop point, then is cancelled with what it had done as its result
    (an upload's document is stored whole or not at all; what a job stored before it
    stopped stays). 409 for a job that has ended."""
    job_id = stored_id(id)
    svc = service()
    cancelled = None
    if job_id is not None:
        cancelled = await svc.database.run(store.cancel, job_id, svc.clock.now())
    if cancelled is None:
        raise ProblemError(404, f"no job {id[:40]!r}; GET /jobs lists them")
    job, action = cancelled
    if action == "ended":
        raise not_cancellable(job.id, job.status)
    return shown(job), 200 if action == "cancelled" else 202


def shown(job: store.Job) -> Job:
    problem = None if job.problem is None else converter.structure(job.problem, Problem)
    return Job(
        job.id,
        job.kind,
        job.status,  # type: ignore[arg-type]
        job.attempts,
        job.max_attempts,
        job.run_after,
        job.progress_done,
        job.progress_total,
        job.result,
        problem,
        job.claimed_by,
        job.created_at,
        job.started_at,
        job.finished_at,
        job.cancel_requested_at,
    )
