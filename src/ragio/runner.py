"""Run a ragcore pipeline: execute each effect it yields and send the result back."""

from __future__ import annotations

from collections.abc import Generator
from datetime import UTC, datetime
from typing import Any, TypeVar

from ragcore.effects import (
    Embed,
    FindDocument,
    Generate,
    ReleaseTokens,
    ReserveTokens,
    SearchChunks,
    SettleTokens,
    StoreDocument,
)
from ragio.knowledge import search, store
from ragio.usage import ledger

T = TypeVar("T")


async def run(pipeline: Generator[Any, Any, T], service: Any) -> T:
    """Drive ``pipeline`` to its return value, executing its effects against ``service``."""
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect = pipeline.throw(failure) if failure else pipeline.send(result)
        except StopIteration as done:
            return done.value
        failure = None
        try:
            result = await execute(effect, service)
        except Exception as error:  # the pipeline may handle it; if not, it re-raises
            failure = error


async def execute(effect: Any, service: Any) -> Any:
    match effect:
        case Embed(texts=texts, purpose=purpose):
            return await service.embedder.embed(texts, purpose)
        case SearchChunks(vector=vector, limit=limit):
            dims = service.embedder.space.dimensions
            return await service.database.run(search.search_chunks, vector, limit, dims)
        case Generate():
            return await service.answerer.generate(effect)
        case FindDocument(content_hash=digest):
            return await service.database.run(store.find_document, digest)
        case StoreDocument():
            return await service.database.run(store.store_document, effect)
        case ReserveTokens(role=role, tokens=tokens, caps=caps):
            now = datetime.now(UTC)
            return await service.database.run(ledger.reserve, role, tokens, caps, now)
        case SettleTokens(reservation_id=rid, provider=provider, model=model, usage=usage):
            return await service.database.run(ledger.settle, rid, provider, model, usage)
        case ReleaseTokens(reservation_id=rid):
            return await service.database.run(ledger.release, rid)
    raise TypeError(f"no handler for effect {effect!r}")
