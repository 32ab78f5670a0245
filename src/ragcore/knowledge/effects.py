"""Effects of the knowledge base: embedding texts and searching chunks (storing documents
is ``ragcore.knowledge.documents``'s, beside the pipeline that stores them)."""

from __future__ import annotations

import attrs

from ragcore.effects import Effect
from ragcore.knowledge.retrieval import RetrievedHit

#: an embedding: one float per dimension of the active embedder's space
Vector = list[float]


@attrs.frozen
class Embed(Effect[list[Vector]]):
    """Embed texts. Result: one vector per text, in order.

    ``purpose`` lets providers that distinguish queries from documents do so.
    """

    runs_ahead = True

    texts: tuple[str, ...]
    purpose: str = "document"  # "document" or "query"


@attrs.frozen
class SearchChunks(Effect[list[RetrievedHit]]):
    """The chunks that best match a question: hybrid search by ``vector`` (the question's
    embedding) and ``text`` (the question, for full-text search), fused by reciprocal rank
    fusion (see ``ragcore.knowledge.retrieval``). Only chunks of ``document_ids`` when given.
    ``graph_chunk_ids``: the knowledge graph's ranked list (``rank_graph_chunks``), fused
    as a third list with ``graph_weight``.

    Result: at most ``limit`` ``RetrievedHit``s (``Hit``s that carry the evidence that
    found them), best first.
    """

    runs_ahead = True

    vector: tuple[float, ...]
    text: str
    limit: int
    document_ids: tuple[int, ...] | None = None
    graph_chunk_ids: tuple[int, ...] = ()
    graph_weight: float = 0.0


@attrs.frozen
class FindMentions(Effect[frozenset[str]]):
    """Which of ``names`` (a question's names, lower-cased, as ``names_of`` in
    ``ragcore.chat.support`` reads them) the stored documents mention anywhere: in a
    chunk's text, or in a document's name. Result: those names."""

    runs_ahead = True

    names: tuple[str, ...]
