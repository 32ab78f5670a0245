"""The chat pipeline: embed the question, search, trim, generate, check citations.

Written as a generator of effects (see ``ragcore.effects``): it yields what it
needs and returns a ``ChatAnswer``. The runner in ragio executes the effects;
``tests/core`` answers them with recorded results.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import attrs

from ragcore.chat.citations import Citation, resolve_citations
from ragcore.chat.extractive import NOT_FOUND
from ragcore.chat.prompts import build_prompt
from ragcore.chat.sources import Hit, number_sources, trim_hits
from ragcore.effects import Embed, Generate, Reply, SearchChunks
from ragcore.errors import InvalidInput

MAX_QUESTION_CHARS = 4000
SEARCH_LIMIT = 8


@attrs.frozen
class ChatRequest:
    question: str
    role: str | None = None


@attrs.frozen
class ChatPolicy:
    """The settings the pipeline obeys."""

    max_context_chars: int
    max_output_tokens: int
    temperature: float
    search_limit: int = SEARCH_LIMIT

    @classmethod
    def from_settings(cls, settings: Any) -> ChatPolicy:
        return cls(
            max_context_chars=settings.max_context_chars,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.default_temperature,
        )


@attrs.frozen
class ChatAnswer:
    answer: str
    citations: tuple[Citation, ...]
    role: str | None
    provider: str | None  # None when no provider was asked
    model: str | None


def check_question(question: Any) -> str:
    """The question, stripped; InvalidInput when missing, blank or too long."""
    if question is None:
        raise InvalidInput("question", "is required")
    if not isinstance(question, str):
        raise InvalidInput("question", "must be text")
    question = question.strip()
    if not question:
        raise InvalidInput("question", "must not be blank")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(
            "question", f"has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}"
        )
    return question


def answer_question(
    request: ChatRequest, policy: ChatPolicy
) -> Generator[Embed | SearchChunks | Generate, Any, ChatAnswer]:
    question = check_question(request.question)
    [vector] = yield Embed((question,), purpose="query")
    hits: list[Hit] = yield SearchChunks(tuple(vector), question, policy.search_limit)
    kept = trim_hits(hits, policy.max_context_chars)
    if not kept:
        # Nothing to ground an answer on: say so without spending a provider call.
        return ChatAnswer(NOT_FOUND, (), request.role, provider=None, model=None)
    sources = number_sources(kept)
    reply: Reply = yield Generate(
        build_prompt(question, sources),
        max_output_tokens=policy.max_output_tokens,
        temperature=policy.temperature,
    )
    text, citations = resolve_citations(reply.text, sources)
    return ChatAnswer(text, citations, request.role, provider=reply.provider, model=reply.model)
