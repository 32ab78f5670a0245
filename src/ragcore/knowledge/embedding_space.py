"""Which embedder the stored vectors came from, and what a change of embedder means.

Vectors from different models (or sizes) cannot be compared, so the knowledge
base records the provider, model and dimensions that filled it. Start-up
compares them with the active embedder: same, nothing to do; different with no
chunks stored, the column is re-shaped; different with chunks stored, the
service refuses to start until ``ragchat reindex`` re-embeds them.

Which embedder is active (``choose_embedder``): an explicit EMBEDDING_PROVIDER;
else, when chunks are stored in a space these settings can still embed with (the
local model always can), that space, so that adding a key for answers never forces
re-embedding; else the provider the keys present choose (``embedding_provider``).
"""

from __future__ import annotations

import attrs

from ragcore.settings import Settings, embedding_provider

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


#: The local embedder the settings build: all-MiniLM-L6-v2, int8 ONNX (ragio.providers.local).
LOCAL_SPACE = EmbeddingSpace("local", "all-MiniLM-L6-v2-onnx-int8", 384)


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
    return NeedsReindex(mismatch_message(recorded, active, chunk_count))


def mismatch_message(recorded: EmbeddingSpace, active: EmbeddingSpace, chunk_count: int) -> str:
    """The refusal: what is stored, what would embed, and both ways on."""
    return (
        f"the knowledge base holds {chunk_count} chunks embedded with {recorded.describe()}, "
        f"but the active embedder is {active.describe()}. To keep the stored chunks, "
        f"{keep_hint(recorded)}; to re-embed them with {active.provider}, run "
        "`ragchat reindex`."
    )


def keep_hint(recorded: EmbeddingSpace) -> str:
    """The settings that embed in ``recorded`` again."""
    if recorded == LOCAL_SPACE:
        return "set EMBEDDING_PROVIDER=local"
    if recorded.provider == "openai":
        return (
            "set EMBEDDING_PROVIDER=openai with OPENAI_API_KEY (or OPENAI_BASE_URL), "
            f"OPENAI_EMBEDDING_MODEL={recorded.model} and "
            f"EMBEDDING_DIMENSIONS={recorded.dimensions}"
        )
    if recorded.provider == "genai":
        return (
            f"set EMBEDDING_PROVIDER=genai with GENAI_API_KEY, "
            f"GENAI_EMBEDDING_MODEL={recorded.model} and "
            f"EMBEDDING_DIMENSIONS={recorded.dimensions}"
        )
    return "restore the embedding settings they were made with"


def settings_space(settings: Settings, provider: str) -> EmbeddingSpace | None:
    """The space ``provider`` embeds in under ``settings``; None when they cannot run it
    (no key)."""
    if provider == "local":
        return LOCAL_SPACE
    if provider == "openai" and (settings.openai_api_key or settings.openai_base_url):
        return EmbeddingSpace(
            "openai", settings.openai_embedding_model, settings.embedding_dimensions
        )
    if provider == "genai" and settings.genai_api_key:
        return EmbeddingSpace(
            "genai", settings.genai_embedding_model, settings.embedding_dimensions
        )
    return None


@attrs.frozen
class UseEmbedder:
    """Build this provider's embedder; ``note``, when set, is logged once at start-up."""

    provider: str
    note: str = ""


def choose_embedder(
    settings: Settings, recorded: EmbeddingSpace | None, chunk_count: int
) -> UseEmbedder | NeedsReindex:
    """The embedder to run with, or the refusal when stored chunks cannot be searched.

    An explicit EMBEDDING_PROVIDER is obeyed: if it differs from the stored chunks'
    space, start-up is refused (``ragchat reindex``, or change it back). Unset, the
    stored chunks' space is kept while these settings can embed in it, whichever keys
    are present; only with nothing stored (or a space out of reach) do the keys choose.
    """
    preferred = embedding_provider(settings)
    stored = recorded is not None and chunk_count > 0
    if not settings.embedding_provider and stored:
        assert recorded is not None
        reachable = settings_space(settings, recorded.provider) == recorded
        if reachable and settings_space(settings, preferred) != recorded:
            return UseEmbedder(recorded.provider, keep_note(recorded, preferred))
    active = settings_space(settings, preferred)
    if stored and active is not None and active != recorded:
        assert recorded is not None
        return NeedsReindex(mismatch_message(recorded, active, chunk_count))
    return UseEmbedder(preferred)


def keep_note(recorded: EmbeddingSpace, preferred: str) -> str:
    return (
        f"embedding with {recorded.describe()}, as the stored chunks are (EMBEDDING_PROVIDER "
        f"is unset); to move them to {preferred}, set EMBEDDING_PROVIDER={preferred} and run "
        "`ragchat reindex`"
    )
