"""/profile: the business profile. Read it, set the owner's fields with PATCH, and
rebuild the auto-learned summary from current activity with POST /profile/learn."""

from __future__ import annotations

from quart import Blueprint

from ragcore.api.employees import ProfileLearned, ProfilePatch
from ragcore.api.operations import Reply, operation
from ragcore.employees.profile import Profile, check_profile_patch, learn_summary
from ragcore.usage import Caps
from ragio.chat.policy import answers_with_model
from ragio.employees import profile
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.runner import run

blueprint = Blueprint("profile", __name__)


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
@operation(Reply(200, "The updated profile", ProfileLearned))
async def learn_profile() -> ProfileLearned:
    """Rebuild the learned summary from documents and role memory

    Through the configured LLM when there is one (a model's
    failure falls back to the offline summary), by the extractive summary otherwise."""
    svc = service()
    current = await svc.database.run(profile.get_profile)
    activity = await svc.database.run(profile.activity)
    use_llm = answers_with_model(svc)
    caps = Caps.from_settings(svc.settings)
    pipeline = learn_summary(activity, current, use_llm, caps, svc.settings.usage_ledger)
    summary, learned_by = await run(pipeline, svc)
    saved = await svc.database.run(profile.set_summary, summary, svc.clock.now())
    return ProfileLearned.of(saved, learned_by)
