"""Effects of the knowledge base: embedding texts, searching chunks, storing documents."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ragcore.effects import Effect
from ragcore.knowledge.chunking import Chunk

if TYPE_CHECKING:  # the pipelines that yield these effects define their results
    pass

#: an embedding: one float per dimension of the active embedder's space
Vector = list[float]


@attrs.frozen
class Embed(Effect[list[Vector]]):
    """Embed texts. Result: one vector per text, in order.

    ``purpose`` lets providers that distinguish queries from documents do so.
    """

    texts: tuple[str, ...]
    purpose: str = "document"  # "document" or "query"


@attrs.frozen
class SearchChunks(Effect["list[RetrievedHit]"]):
    """The chunks that best match a question: hybrid search by ``vector`` (the question's
    embedding) and ``text`` (the question, for full-text search), fused by reciprocal rank
    fusion (see ``ragcore.knowledge.retrieval``). Only chunks of ``document_ids`` when given.

    Result: at most ``limit`` ``RetrievedHit``s (``Hit``s that carry the evidence that
    found them), best first.
    """

    vector: tuple[float, ...]
    text: str
    limit: int
    document_ids: tuple[int, ...] | None = None


@attrs.frozen
class FindDocuments(Effect["list[StoredDocument | None]"]):
    """Look documents up by content hash. Result: for each hash, its ``StoredDocument``
    or None, in order."""

    content_hashes: tuple[str, ...]


@attrs.frozen
class StoreDocument:
    """A document to store with its chunks and their vectors (see StoreDocuments).

    ``content_type`` and ``size_bytes`` describe the file the text was read from.
    """

    name: str
    content_hash: str
    text: str
    chunks: tuple[Chunk, ...]
    vectors: tuple[tuple[float, ...], ...]
    content_type: str = "text/plain"
    size_bytes: int = 0


@attrs.frozen
class StoreDocuments(Effect["list[StoredDocument]"]):
    """Store documents, each with all its chunks, in one transaction: all or nothing.

    Result: a ``StoredDocument`` for each, in order (the one already stored when the same
    content was stored meanwhile). A group in one step is what makes bulk ingestion fast
    (scripts/bench_ingest.py).
    """

    documents: tuple[StoreDocument, ...]
