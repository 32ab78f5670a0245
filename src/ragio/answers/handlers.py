"""Handlers of the owner's answers' effects (``ragcore.answers.effects``)."""

from __future__ import annotations

import logging

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.answers.matching import OwnerAnswerMatch, thresholds
from ragio.answers import store
from ragio.providers.chain import embed
from ragio.service import HandlerTable, Service

log = logging.getLogger(__name__)


async def find_owner_answer(effect: FindOwnerAnswer, service: Service) -> OwnerAnswerMatch | None:
    found, missing = await service.database.run(store.nearest, effect.question, effect.vector)
    if missing:  # written while the embedder failed, or before the space changed
        await embed_questions(service)
        found, _ = await service.database.run(store.nearest, effect.question, effect.vector)
    if found is None:
        return None
    space = service.embedder.space
    return OwnerAnswerMatch(
        answer_id=int(found["answer_id"]),
        version=int(found["version"]),
        answer=found["answer"],
        question=found["question"],
        similarity=float(found["similarity"]),
        exact=bool(found["exact"]),
        thresholds=thresholds(space.provider, space.model),
        language=found["language"],
    )


async def embed_questions(service: Service) -> None:
    """Embed the owner's questions not embedded in the current space; a failure is
    logged, and they are matched word for word until the next try."""
    pending = await service.database.run(store.unembedded, service.embedder.space.dimensions)
    if not pending:
        return
    try:
        vectors = await embed(service.embedder, [text for _, text in pending], "query")
    except Exception as error:  # noqa: BLE001 - the turn goes on without them
        log.warning("could not embed %d of the owner's questions: %s", len(pending), error)
        return
    ids = [question_id for question_id, _ in pending]
    pairs = list(zip(ids, vectors, strict=True))
    await service.database.run(store.set_embeddings, pairs)


HANDLERS: HandlerTable = {FindOwnerAnswer: find_owner_answer}
