"""The chat pipeline's policy for a running service: the settings', and whether a
language model answers (it then rewrites follow-up questions: ``ragcore.chat.followup``)."""

from __future__ import annotations

import attrs

from ragcore.chat.pipeline import ChatPolicy
from ragio.service import Service


def answers_with_model(service: Service) -> bool:
    """Whether a language model answers, not only the offline extractive answerer."""
    return bool(service.answerer.name != "extractive")


def chat_policy(service: Service) -> ChatPolicy:
    policy = ChatPolicy.from_settings(service.settings)
    return attrs.evolve(policy, rewrite_with_model=answers_with_model(service))
