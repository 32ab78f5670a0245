"""Hybrid retrieval rules: reciprocal rank fusion and what counts as relevant."""

import pytest

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.knowledge.retrieval import (
    CANDIDATES,
    EF_SEARCH_LIMIT,
    RRF_K,
    RetrievedHit,
    candidate_depth,
    ef_search,
    is_relevant,
    relevant_hits,
    rrf_score,
    similarity_floor,
)
from ragcore.language import DetectLanguage, LanguageGuess, not_found
from ragcore.sources import Hit
from tests.core.drive import drive

POLICY = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2)


def hit(chunk_id, text="Returns are accepted within 30 days.", **evidence):
    return RetrievedHit(chunk_id, 1, "refunds.md", text, 0.01, **evidence)


def test_rrf_adds_one_over_k_plus_rank_from_each_list_the_item_is_in():
    assert RRF_K == 10
    assert rrf_score(1, 1) == pytest.approx(2 / 11)
    assert rrf_score(3, None) == pytest.approx(1 / 13)
    assert rrf_score(None, None) == 0
    # found by both lists at middling ranks beats first in one list only
    assert rrf_score(5, 5) > rrf_score(1, None)


def test_a_hit_sharing_a_term_with_the_question_is_relevant_whatever_its_similarity():
    assert is_relevant(hit(1, lexical_rank=4, vector_rank=None, similarity=0.01))
    assert is_relevant(hit(1, lexical_rank=1, vector_rank=9, similarity=0.0, similarity_floor=0.3))


def test_a_dense_only_hit_is_relevant_from_the_embedders_floor():
    assert not is_relevant(hit(1, vector_rank=1, similarity=0.29, similarity_floor=0.3))
    assert is_relevant(hit(1, vector_rank=1, similarity=0.30, similarity_floor=0.3))


def test_without_a_measured_floor_dense_hits_are_trusted():
    assert is_relevant(hit(1, vector_rank=3, similarity=0.05, similarity_floor=None))


def test_a_plain_hit_carries_no_evidence_and_counts():
    assert is_relevant(Hit(1, 1, "a.md", "text", 0.5))


def test_relevant_hits_keep_their_order():
    hits = [
        hit(1, vector_rank=1, similarity=0.2, similarity_floor=0.3),
        hit(2, lexical_rank=1),
        hit(3, vector_rank=2, similarity=0.6, similarity_floor=0.3),
    ]
    assert [h.chunk_id for h in relevant_hits(hits)] == [2, 3]


def test_floors_are_known_for_the_local_models_only():
    assert similarity_floor(EmbeddingSpace("local", "all-MiniLM-L6-v2-onnx-int8", 384)) == 0.30
    assert similarity_floor(EmbeddingSpace("openai", "text-embedding-3-large", 3072)) is None


def test_each_list_goes_at_least_as_deep_as_the_hits_asked():
    assert candidate_depth(8) == CANDIDATES
    assert candidate_depth(CANDIDATES + 20) == CANDIDATES + 20


def test_ef_search_grows_with_the_chunks_and_never_falls_short_of_the_depth():
    assert ef_search(CANDIDATES, 5_000) == CANDIDATES
    assert ef_search(CANDIDATES, 100_000) == 200
    assert ef_search(CANDIDATES, 1_000_000) == 400
    assert 200 < ef_search(CANDIDATES, 300_000) < 400
    assert ef_search(CANDIDATES, 10_000_000) == 600  # the last step's slope
    assert ef_search(CANDIDATES, 10**12) == EF_SEARCH_LIMIT
    assert ef_search(300, 10_000) == 300


def recorded(hits, reply="Within 30 days [1]."):
    def answer(effect):
        match effect:
            case DetectLanguage():
                return [LanguageGuess("en", "English", 0.9)]
            case FindOwnerAnswer():
                return None
            case Embed():
                return [[0.1, 0.2, 0.3]]
            case SearchChunks():
                return list(hits)
            case Generate():
                return ModelReply(reply, provider="recorded", model="m1")
        raise AssertionError(effect)

    return answer


def test_with_nothing_relevant_retrieved_the_answer_says_so_and_no_provider_is_called():
    unrelated = [
        hit(1, vector_rank=1, similarity=0.18, similarity_floor=0.3),
        hit(2, vector_rank=2, similarity=0.11, similarity_floor=0.3),
    ]
    request = ChatRequest("Who won the football world cup in 2018?")
    outcome, effects = drive(answer_question(request, POLICY), recorded(unrelated))
    assert [type(e) for e in effects] == [Embed, FindOwnerAnswer, SearchChunks]
    assert outcome.citations == () and outcome.provider is None
    assert outcome.answer == not_found("en")


def test_only_the_relevant_hits_reach_the_prompt():
    hits = [
        hit(1, "Shipping takes 3 days.", vector_rank=1, similarity=0.2, similarity_floor=0.3),
        hit(2, "Returns: 30 days.", lexical_rank=1, vector_rank=2, similarity=0.5),
    ]
    _, effects = drive(answer_question(ChatRequest("return window?"), POLICY), recorded(hits))
    assert [s.hit.chunk_id for s in effects[-1].prompt.sources] == [2]


def test_the_search_asks_with_the_question_text_and_no_document_filter():
    question = "How long do I have to return something?"
    _, effects = drive(
        answer_question(ChatRequest(question), POLICY), recorded([hit(1, lexical_rank=1)])
    )
    [search] = [e for e in effects if isinstance(e, SearchChunks)]
    assert search.text == question and search.document_ids is None
