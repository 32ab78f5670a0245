"""How documents become the knowledge graph's data, and how a question reaches it: from
the question's words to the graph's ranked list of chunks (``ragcore.knowledge.graph``),
fused with the dense and full-text lists by the search (``SearchChunks``). The
extraction rules themselves are in ``ragcore.knowledge.entities``."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import attrs

from ragcore.generation import Generate, ModelReply, Prompt
from ragcore.knowledge.entities import (
    chunk_graph,
    document_aliases,
    graph_prompt,
    question_keys,
    read_graph_reply,
)
from ragcore.knowledge.graph import (
    ChunkGraph,
    DocumentGraph,
    Neighbourhood,
    ReachGraph,
    rank_graph_chunks,
)
from ragcore.knowledge.retrieval import candidate_depth
from ragcore.metering import MeteredEffect, metered_generate
from ragcore.settings import Settings, graph_store_kind
from ragcore.usage import Caps

#: what a model's extraction of one chunk may write (about 40 entities and relations)
GRAPH_OUTPUT_TOKENS = 800
GRAPH_SYSTEM = "You extract knowledge graphs from business documents. ModelReply with JSON only."


@attrs.frozen
class GraphPolicy:
    """GRAPH_WEIGHT, GRAPH_HOPS and DOMAIN_TERMS, for a graph that is on."""

    weight: float
    hops: int = 1
    domain_terms: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> GraphPolicy | None:
        """None when the graph is off or weighs nothing: no question then reaches it."""
        if graph_store_kind(settings) is None or settings.graph_weight <= 0:
            return None
        return cls(settings.graph_weight, settings.graph_hops, tuple(settings.domain_terms))


def graph_ranked(
    question: str, policy: GraphPolicy, limit: int
) -> Generator[ReachGraph, Any, tuple[int, ...]]:
    """The graph's ranked chunk ids for ``question``, as deep as the search's other lists;
    empty when it names no entity the graph knows."""
    keys = question_keys(question, policy.domain_terms)
    if not keys:
        return ()
    reached: Neighbourhood = yield ReachGraph(tuple(keys), policy.hops)
    return tuple(rank_graph_chunks(reached, candidate_depth(limit)))


def document_graph(
    document_id: int, chunks: Sequence[tuple[int, str]], domain_terms: Sequence[str] = ()
) -> DocumentGraph:
    """What a stored document contributes: each chunk's (id, text) entities and relations,
    with the aliases the document defines anywhere ("Service Level Agreement (SLA)" in its
    first chunk makes "SLA" in its seventh the same entity)."""
    aliases = document_aliases([text for _, text in chunks])
    return DocumentGraph(
        document_id,
        tuple(chunk_graph(chunk_id, text, domain_terms, aliases) for chunk_id, text in chunks),
    )


@attrs.frozen
class ModelExtraction:
    """GRAPH_MODEL_EXTRACTION with a language model answering: how its calls are metered
    and capped (the budgets of the service itself, role None)."""

    caps: Caps = Caps()
    ledger: bool = False


def with_model(
    graph: DocumentGraph, texts: Sequence[str], policy: ModelExtraction
) -> Generator[MeteredEffect, Any, DocumentGraph]:
    """``graph`` (the offline rules' reading) with what a language model adds for each
    chunk: entities the rules missed and typed relations (``acquired``, ``part_of``), only
    as far as the chunk's text bears them out (``read_graph_reply``). One call a chunk,
    metered and held to the budgets. Once a call fails (the providers down) or a cap
    stops one, the rest of the document is not asked: those chunks keep the rules'
    reading."""
    chunks: list[ChunkGraph] = []
    stopped = False
    for chunk, text in zip(graph.chunks, texts, strict=True):
        if stopped:
            chunks.append(chunk)
            continue
        request = Generate(
            Prompt(GRAPH_SYSTEM, graph_prompt(text), "", ()),
            max_output_tokens=GRAPH_OUTPUT_TOKENS,
            temperature=0.0,
            task="graph",
            stream=False,
        )
        try:
            reply = yield from metered_generate(request, None, policy.caps, policy.ledger)
        except Exception:  # noqa: BLE001 (the rules' reading stands)
            reply = None
        if not isinstance(reply, ModelReply):
            stopped = True
            chunks.append(chunk)
            continue
        entities, relations = read_graph_reply(reply.text, text)
        known = {entity.key for entity in chunk.entities}
        chunks.append(
            ChunkGraph(
                chunk.chunk_id,
                chunk.entities + tuple(e for e in entities if e.key not in known),
                chunk.relations + tuple(r for r in relations if r not in chunk.relations),
            )
        )
    return DocumentGraph(graph.document_id, tuple(chunks))
