"""Which embedder the stored vectors came from, and what a change of embedder means.

Vectors from different models (or sizes) cannot be compared, so the knowledge
base records the provider, model and dimensions that filled it. Start-up
compares them with the active embedder: same, nothing to do; different with no
chunks stored, the column is re-shaped; different with chunks stored, the
service refuses to start until ``ragchat reindex`` re-embeds them.
"""

from __future__ import annotations

import attrs

#: pgvector's HNSW index takes up to 2,000 dimensions on vector, 4,000 on halfvec.
HNSW_VECTOR_LIMIT = 2000
HNSW_HALFVEC_LIMIT = 4000


@attrs.frozen
class EmbeddingSpace:
    provider: str
    model: str
    dimensions: int

    def describe(self) -> str:
        return f"{self.provider} model {self.model!r} at {self.dimensions} dimensions"


def index_kind(dimensions: int) -> str:
    """'vector': HNSW on the column; 'halfvec': HNSW on the half-precision cast."""
    if dimensions <= HNSW_VECTOR_LIMIT:
        return "vector"
    if dimensions <= HNSW_HALFVEC_LIMIT:
        return "halfvec"
    raise ValueError(
        f"{dimensions} dimensions is more than pgvector can index ({HNSW_HALFVEC_LIMIT}); "
        "set EMBEDDING_DIMENSIONS lower"
    )


@attrs.frozen
class Keep:
    pass


@attrs.frozen
class Reshape:
    """Give the (empty) column the new dimensions and index, and record the new space."""

    space: EmbeddingSpace


@attrs.frozen
class NeedsReindex:
    message: str


def plan_space(
    recorded: EmbeddingSpace | None, active: EmbeddingSpace, chunk_count: int
) -> Keep | Reshape | NeedsReindex:
    index_kind(active.dimensions)  # refuse unindexable sizes before touching anything
    if recorded == active:
        return Keep()
    if recorded is None or chunk_count == 0:
        return Reshape(active)
    return NeedsReindex(
        f"the knowledge base holds {chunk_count} chunks embedded with {recorded.describe()}, "
        f"but the active embedder is {active.describe()}. Run `ragchat reindex` to re-embed "
        "them, or restore the previous embedding settings."
    )
