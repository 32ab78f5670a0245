"""/profile: the business profile. Read it, set the owner's fields with PATCH, and
rebuild the auto-learned summary from current activity with POST /profile/learn."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore.employees.profile import check_profile_patch, learn_summary, profile_view
from ragcore.usage import Caps
from ragio.employees import profile
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.runner import run

blueprint = Blueprint("profile", __name__)


@blueprint.get("/profile")
async def get_profile() -> dict[str, Any]:
    return profile_view(await service().database.run(profile.get_profile))


@blueprint.patch("/profile")
async def patch_profile() -> dict[str, Any]:
    fields = check_profile_patch(await json_body(required=True))
    return profile_view(await service().database.run(profile.patch_profile, fields))


@blueprint.post("/profile/learn")
async def learn_profile() -> dict[str, Any]:
    """Rebuild the summary: through the configured LLM when there is one (a model's
    failure falls back to the offline summary), by the extractive summary otherwise."""
    svc = service()
    current = await svc.database.run(profile.get_profile)
    activity = await svc.database.run(profile.activity)
    use_llm = svc.answerer.name != "extractive"
    caps = Caps.from_settings(svc.settings)
    pipeline = learn_summary(activity, current, use_llm, caps, svc.settings.usage_ledger)
    summary, learned_by = await run(pipeline, svc)
    saved = await svc.database.run(profile.set_summary, summary, svc.clock.now())
    return {**profile_view(saved), "learned_by": learned_by}
