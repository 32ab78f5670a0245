"""Handlers of the knowledge effects (``ragcore.knowledge.effects``, and the graph's
``ReachGraph`` and ``TeachGraph``)."""

from __future__ import annotations

from ragcore.knowledge.documents import (
    DeleteDocuments,
    FindDocuments,
    FindNamed,
    StoredDocument,
    StoreDocuments,
)
from ragcore.knowledge.effects import Embed, FindMentions, SearchChunks, Vector
from ragcore.knowledge.graph import Neighbourhood, ReachGraph, TeachGraph
from ragcore.knowledge.retrieval import RetrievedHit
from ragio.knowledge import search, store
from ragio.providers.chain import embed
from ragio.service import HandlerTable, Service


async def embed_texts(effect: Embed, service: Service) -> list[Vector]:
    return await embed(service.embedder, effect.texts, effect.purpose)


async def search_chunks(effect: SearchChunks, service: Service) -> list[RetrievedHit]:
    return await service.database.run(search.search, effect, service.embedder.space)


async def find_mentions(effect: FindMentions, service: Service) -> frozenset[str]:
    if not effect.names:
        return frozenset()
    return await service.database.run(search.mentioned, effect.names)


async def find_documents(effect: FindDocuments, service: Service) -> list[StoredDocument | None]:
    return await service.database.run(store.find_documents, effect.content_hashes)


async def find_named(effect: FindNamed, service: Service) -> list[list[StoredDocument]]:
    return await service.database.run(store.find_named, effect.names)


async def store_documents(effect: StoreDocuments, service: Service) -> list[StoredDocument]:
    return await service.database.run(store.store_documents, effect.documents)


async def delete_documents(effect: DeleteDocuments, service: Service) -> list[StoredDocument]:
    return await service.database.run(store.delete_documents, effect.reference)


async def teach_graph(effect: TeachGraph, service: Service) -> None:
    await service.graph.learn(effect.stored, effect.gone)


async def reach_graph(effect: ReachGraph, service: Service) -> Neighbourhood:
    return await service.graph.reach(effect)


HANDLERS: HandlerTable = {
    ReachGraph: reach_graph,
    Embed: embed_texts,
    SearchChunks: search_chunks,
    FindMentions: find_mentions,
    FindDocuments: find_documents,
    FindNamed: find_named,
    StoreDocuments: store_documents,
    DeleteDocuments: delete_documents,
    TeachGraph: teach_graph,
}
