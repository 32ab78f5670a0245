"""/profile: the business profile. Read it, set the owner's fields with PATCH, and
rebuild the auto-learned summary from current activity with POST /profile/learn."""

from __future__ import annotations

from quart import Blueprint

from ragcore.api.employees import ProfileLearned, ProfilePatch
from ragcore.api.jobs import Job
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.converter import converter
from ragcore.employees.profile import Profile, check_profile_patch
from ragio.employees import profile
from ragio.employees.profile_learning import LEARN, PROFILE_KEY
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.jobs import poke_worker, shown
from ragio.jobs import store as jobs_store
from ragio.jobs.waiting import wait_for_job

blueprint = Blueprint("profile", __name__)
LEARN_WAIT_SECONDS = 60.0  # how long POST /profile/learn waits for its job


@blueprint.get("/profile")
@operation(Reply(200, "The profile", Profile))
async def get_profile() -> Profile:
    """The business profile (empty fields when never set)"""
    return await service().database.run(profile.get_profile)


@blueprint.patch("/profile")
@operation(Reply(200, "The updated profile", Profile), 422, body=ProfilePatch)
async def patch_profile() -> Profile:
    """Set the owner's fields: description, products, tone, language"""
    fields = check_profile_patch(await json_body(required=True))
    return await service().database.run(profile.patch_profile, fields)


@blueprint.post("/profile/learn")
@operation(
    Reply(200, "The updated profile", ProfileLearned),
    Reply(
        202, f"Still learning after {LEARN_WAIT_SECONDS:g} s: the job (Location: /jobs/{{id}})", Job
    ),
    409,
    502,
    503,
)
async def learn_profile() -> ProfileLearned | tuple[Job, int, dict[str, str]]:
    """Rebuild the learned summary from documents and role memory

    Through the configured LLM when there is one (a model's failure falls back to the
    offline summary), by the extractive summary otherwise. It runs as a job (one at a
    time: a request while one runs waits for that one), in whichever process runs jobs;
    the request waits for it, and answers 202 with the job when that takes longer."""
    svc = service()
    job, _ = await svc.database.run(
        lambda conn: jobs_store.enqueue(conn, LEARN, {}, svc.clock.now(), key=PROFILE_KEY)
    )
    poke_worker()
    job = await wait_for_job(svc.database, job, LEARN_WAIT_SECONDS)
    if job.status == "done" and job.result is not None:
        return converter.structure(job.result, ProfileLearned)
    if job.status == "failed" and job.problem is not None:  # its last attempt's problem
        body = {key: value for key, value in job.problem.items() if key != "type"}
        raise ProblemError(body.pop("status"), body.pop("detail"), title=body.pop("title"), **body)
    if job.status == "cancelled":
        raise ProblemError(
            409,
            f"the learning job {job.id} was cancelled (DELETE /jobs/{job.id}); nothing was learned",
        )
    return shown(job), 202, {"Location": f"/jobs/{job.id}"}
