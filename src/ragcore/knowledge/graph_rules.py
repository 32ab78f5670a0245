"""How documents become the knowledge graph's data, and how a question reaches it: from
the question's words to the graph's ranked list of chunks (``ragcore.knowledge.graph``),
fused with the dense and full-text lists by the search (``SearchChunks``). The
extraction rules themselves are ``ragcore.knowledge.entities``'."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import attrs

from ragcore.knowledge.entities import chunk_graph, document_aliases, question_keys
from ragcore.knowledge.graph import DocumentGraph, Neighbourhood, ReachGraph, rank_graph_chunks
from ragcore.knowledge.retrieval import candidate_depth
from ragcore.settings import Settings, graph_store_kind


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
