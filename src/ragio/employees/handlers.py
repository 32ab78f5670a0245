"""Handlers of the employees' effects (``ragcore.employees.effects``): role memory and
learning, in the database."""

from __future__ import annotations

import logging

from ragcore.employees.learning import History, LearnPattern, RecordInteraction
from ragcore.employees.memory import (
    AddMemory,
    FetchRoleMemory,
    FindDuplicateMemory,
    FindUnembeddedMemory,
    MemoryItem,
    StoreMemoryVectors,
)
from ragio.employees import learning, memory
from ragio.service import HandlerTable, Service

log = logging.getLogger(__name__)


async def find_unembedded_memory(
    effect: FindUnembeddedMemory, service: Service
) -> list[tuple[int, str]]:
    dimensions = service.embedder.space.dimensions
    return await service.database.run(memory.unembedded, effect.role, dimensions)


async def store_memory_vectors(effect: StoreMemoryVectors, service: Service) -> None:
    await service.database.run(memory.set_embeddings, effect.vectors)


async def fetch_role_memory(effect: FetchRoleMemory, service: Service) -> list[MemoryItem]:
    return await service.database.run(memory.context_items, effect)


async def find_duplicate_memory(effect: FindDuplicateMemory, service: Service) -> int | None:
    return await service.database.run(memory.find_duplicate, effect.role, effect.digest)


async def add_memory(effect: AddMemory, service: Service) -> MemoryItem | None:
    return await service.database.run(memory.add_memory, effect.role, effect.memory, effect.vector)


# Learning never costs anyone their answer: a failure is logged and learns nothing.


async def record_interaction(effect: RecordInteraction, service: Service) -> History:
    try:
        return await service.database.run(learning.record, effect, service.clock.now())
    except Exception:
        _unlearned()
        return History(recorded=False)


async def learn_pattern(effect: LearnPattern, service: Service) -> MemoryItem | None:
    try:
        return await service.database.run(learning.learn, effect)
    except Exception:
        _unlearned()
        return None


def _unlearned() -> None:
    log.warning("learning from an answer failed; the answer is unaffected", exc_info=True)


HANDLERS: HandlerTable = {
    FindUnembeddedMemory: find_unembedded_memory,
    StoreMemoryVectors: store_memory_vectors,
    FetchRoleMemory: fetch_role_memory,
    FindDuplicateMemory: find_duplicate_memory,
    AddMemory: add_memory,
    RecordInteraction: record_interaction,
    LearnPattern: learn_pattern,
}
