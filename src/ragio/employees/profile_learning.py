"""Rebuilding the business profile's learned summary, as a job (``LEARN``): one at a time
across every process on the database, in whichever process runs jobs."""

from __future__ import annotations

from typing import Any

from ragcore.api.employees import ProfileLearned
from ragcore.converter import converter
from ragcore.employees.profile import learn_summary
from ragcore.usage import Caps
from ragio.chat.policy import answers_with_model
from ragio.employees import profile
from ragio.jobs.worker import Running
from ragio.runner import run

LEARN = "learn"  # the kind of job
PROFILE_KEY = "profile"  # its key: one rebuild of the summary unfinished at a time


async def learn(running: Running) -> dict[str, Any]:
    """Through the configured LLM when there is one (a model's failure falls back to the
    offline summary), by the extractive summary otherwise; the profile as learned."""
    svc = running.service
    current = await svc.database.run(profile.get_profile)
    activity = await svc.database.run(profile.activity)
    use_llm = answers_with_model(svc)
    caps = Caps.from_settings(svc.settings)
    pipeline = learn_summary(activity, current, use_llm, caps, svc.settings.usage_ledger)
    summary, learned_by = await run(pipeline, svc)
    saved = await svc.database.run(profile.set_summary, summary, svc.clock.now())
    result: dict[str, Any] = converter.unstructure(ProfileLearned.of(saved, learned_by))
    return result
