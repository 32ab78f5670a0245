import pytest

from ragcore.knowledge.embedding_space import (
    LOCAL_SPACE,
    EmbeddingSpace,
    Keep,
    NeedsReindex,
    Reshape,
    UseEmbedder,
    choose_embedder,
    index_kind,
    plan_space,
)
from ragcore.settings import load_settings

LOCAL = EmbeddingSpace("local", "wordllama", 256)
GEMINI = EmbeddingSpace("genai", "gemini-embedding-001", 3072)


def test_the_index_follows_pgvectors_limits():
    assert index_kind(256) == "vector"
    assert index_kind(2000) == "vector"
    assert index_kind(3072) == "halfvec"
    with pytest.raises(ValueError, match="EMBEDDING_DIMENSIONS"):
        index_kind(4001)


def test_a_new_knowledge_base_takes_the_active_space():
    assert plan_space(None, GEMINI, 0) == Reshape(GEMINI)


def test_the_same_space_needs_nothing():
    assert plan_space(LOCAL, LOCAL, 100) == Keep()


def test_a_change_with_nothing_stored_reshapes():
    assert plan_space(LOCAL, GEMINI, 0) == Reshape(GEMINI)


def test_a_change_with_chunks_stored_asks_for_reindex():
    plan = plan_space(LOCAL, GEMINI, 12)
    assert isinstance(plan, NeedsReindex)
    assert "ragchat reindex" in plan.message
    assert "12 chunks" in plan.message and "wordllama" in plan.message


# ---------------------------------------------------------------- which embedder runs

MINILM = LOCAL_SPACE
OPENAI = EmbeddingSpace("openai", "text-embedding-3-large", 3072)


def test_with_nothing_stored_the_keys_choose():
    keyed = load_settings({"OPENAI_API_KEY": "sk-x"})
    assert choose_embedder(keyed, None, 0) == UseEmbedder("openai")
    assert choose_embedder(keyed, MINILM, 0) == UseEmbedder("openai")  # empty: reshaped
    assert choose_embedder(load_settings({}), None, 0) == UseEmbedder("local")


def test_adding_a_key_keeps_the_locally_embedded_chunks():
    keyed = load_settings({"OPENAI_API_KEY": "sk-x"})
    choice = choose_embedder(keyed, MINILM, 455)
    assert isinstance(choice, UseEmbedder) and choice.provider == "local"
    assert "EMBEDDING_PROVIDER=openai" in choice.note and "ragchat reindex" in choice.note
    genai = load_settings({"GENAI_API_KEY": "g-x"})
    assert choose_embedder(genai, MINILM, 455).provider == "local"  # type: ignore[union-attr]


def test_the_stored_space_matching_the_keys_needs_no_note():
    keyed = load_settings({"OPENAI_API_KEY": "sk-x"})
    assert choose_embedder(keyed, OPENAI, 10) == UseEmbedder("openai")
    assert choose_embedder(load_settings({}), MINILM, 10) == UseEmbedder("local")


def test_a_stored_provider_space_is_kept_while_its_key_is_there():
    both = load_settings({"OPENAI_API_KEY": "sk-x", "GENAI_API_KEY": "g-x"})  # genai first
    assert choose_embedder(both, OPENAI, 10).provider == "openai"  # type: ignore[union-attr]


def test_a_stored_space_out_of_reach_is_refused_naming_both_ways():
    # the OpenAI key removed: local is what the settings can embed with
    choice = choose_embedder(load_settings({}), OPENAI, 10)
    assert isinstance(choice, NeedsReindex)
    assert "10 chunks embedded with openai" in choice.message
    assert "EMBEDDING_PROVIDER=openai with OPENAI_API_KEY" in choice.message
    assert "ragchat reindex" in choice.message
    # another model or size of the same provider cannot be kept either
    other = load_settings({"OPENAI_API_KEY": "sk-x", "EMBEDDING_DIMENSIONS": "256"})
    choice = choose_embedder(other, OPENAI, 10)
    assert isinstance(choice, NeedsReindex) and "EMBEDDING_DIMENSIONS=3072" in choice.message


def test_an_explicit_provider_differing_from_the_stored_chunks_is_refused():
    explicit = load_settings({"OPENAI_API_KEY": "sk-x", "EMBEDDING_PROVIDER": "openai"})
    choice = choose_embedder(explicit, MINILM, 455)
    assert isinstance(choice, NeedsReindex)
    assert "455 chunks embedded with local model 'all-MiniLM-L6-v2-onnx-int8'" in choice.message
    assert "EMBEDDING_PROVIDER=local" in choice.message and "ragchat reindex" in choice.message
    local = load_settings({"OPENAI_API_KEY": "sk-x", "EMBEDDING_PROVIDER": "local"})
    assert choose_embedder(local, MINILM, 455) == UseEmbedder("local")
    assert choose_embedder(explicit, MINILM, 0) == UseEmbedder("openai")
