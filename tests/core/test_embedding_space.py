import pytest

from ragcore.knowledge.embedding_space import (
    EmbeddingSpace,
    Keep,
    NeedsReindex,
    Reshape,
    index_kind,
    plan_space,
)

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
