"""Writing the owner's answers: their questions embedded as they are stored, and an FAQ
imported (POST /answers, POST /answers/import, ``ragchat answers import``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ragcore.answers.faq import read_faq
from ragcore.answers.matching import answer_language
from ragio.answers import store
from ragio.providers.chain import embed
from ragio.service import Service

log = logging.getLogger(__name__)


async def embedded(svc: Service, questions: Sequence[str]) -> list[list[float]] | None:
    """The questions' vectors; None when the embedder failed: they are stored all the
    same, matched word for word, and embedded before the next match
    (``ragio.answers.handlers.embed_questions``)."""
    if not questions:
        return []
    try:
        return await embed(svc.embedder, list(questions), "query")
    except Exception as error:  # noqa: BLE001 - stored all the same, embedded later
        log.warning("could not embed %d of the owner's questions: %s", len(questions), error)
        return None


async def language_of(svc: Service, answer: str) -> str | None:
    """The language an owner's answer is surely written in (``answer_language``); an
    answer is not served as it is to a question surely asked in another language."""
    return answer_language(answer, await svc.language.detect(answer))


async def import_faq(svc: Service, text: str, kind: str) -> dict[str, Any]:
    """Read, embed and store an FAQ, all of it or nothing: FaqInvalid naming every
    malformed entry by line, store.Claimed when an entry's questions belong to two
    answers; the counts and ids otherwise (``store.import_faq``)."""
    entries = read_faq(text, kind)
    vectors = await embedded(svc, [q for entry in entries for q in entry.questions])
    per_entry: list[list[list[float]] | None] = []
    position = 0
    for entry in entries:
        count = len(entry.questions)
        per_entry.append(None if vectors is None else vectors[position : position + count])
        position += count
    languages = [await language_of(svc, entry.answer) for entry in entries]
    return await svc.database.run(store.import_faq, entries, per_entry, languages, svc.clock.now())
