"""Hybrid retrieval rules: how the two ranked lists are fused, and what counts as relevant.

Search runs two rankings over the chunks in one SQL statement (see
``ragio.knowledge.search``): dense (cosine distance to the question's vector,
through the HNSW index) and full text (BM25 over PostgreSQL's ``english``
text search vectors, with term statistics kept by triggers). Each keeps its
best ``CANDIDATES``; reciprocal rank fusion adds ``1 / (RRF_K + rank)`` from
each list a chunk appears in, so a chunk both rankings like comes first, and
an exact keyword (a product code, a name) that the dense side misses still
makes the list.

With the knowledge graph on, a third list joins the fusion: the chunks that name the
question's entities or their neighbours (``ragcore.knowledge.graph``), weighted by
GRAPH_WEIGHT.

Relevance, for "nothing relevant was retrieved": a hit is relevant when it
shares an indexed term with the question (English stop words are not
indexed, so this is a content word or its stem), when the graph linked it to
the question's entities, or when its cosine
similarity reaches the floor measured for the embedder. Embedders without a
measured floor (the remote ones) are trusted: their dense hits count.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import attrs

from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.sources import Hit

#: Reciprocal rank fusion constant. 60 is the usual value (Cormack et al. 2009); a
#: smaller one lets each list's first places count for more. Measured with the local
#: MiniLM (scripts/eval_retrieval.py, SciFact nDCG@10 of the hybrid search): 0.711 at
#: 60 (0.711-0.713 from 30 to 120), 0.720-0.722 from 3 to 12, 0.722 at 10; on
#: eval/answers, 10 also puts an expected page among a model's sources for 79.2 % of
#: the questions (77.4 % at 60) and lifts the offline answer's citations from 67.9 %
#: to 69.8 % (eval/answers/README.md).
RRF_K = 10
#: how deep each ranked list goes before fusion
CANDIDATES = 50
#: BM25 parameters (Robertson; the values of Lucene and of the BEIR baseline)
BM25_K1 = 1.2
BM25_B = 0.75
#: The full-text side scores only chunks that contain one of the question's rarer
#: terms: terms are taken rarest first while the chunks containing them add up to at
#: most this many (the rarest always counts). Common terms still add to the score of
#: every chunk found. This bounds the work (about 8 µs a chunk) on large knowledge
#: bases. On SciFact (5,183 chunks) nDCG@10 stays the same down to a budget of 250
#: and loses 0.01 (hybrid) at 100; scripts/eval_retrieval.py --budget measures it.
LEXICAL_BUDGET = 1_000

#: Cosine similarity from which a dense hit counts as relevant, per local model.
#: Measured with scripts/eval_retrieval.py --floors on SciFact: the best chunk's
#: similarity is 0.41 or more for 95 % of the corpus's own questions and 0.29 or less
#: for 95 % of unrelated ones (shop, travel and HR questions), for both models.
SIMILARITY_FLOORS: dict[tuple[str, str], float] = {
    ("local", "all-MiniLM-L6-v2-onnx-int8"): 0.30,
    ("local", "wordllama-l2_supercat"): 0.30,
}

#: Cosine similarity from which the best hit is surely on the question's topic, per
#: local model: the offline answerer then answers, and a model is asked, even when the
#: words differ (a paraphrase; ``ragcore.chat.support``). Measured with
#: scripts/eval_answers.py on eval/answers (144 Debian pages): the best hit of every
#: English fact, how-to and multi-document question reached 0.48; of the 11
#: unanswerable questions, 10 stayed under 0.43 and one reached 0.50 (the same with
#: the local embedder's rewritten graph, ragio.providers.minilm_graph). Unmeasured
#: embedders (the remote ones) have none: the words decide, and nothing is declined.
TOPIC_FLOORS: dict[tuple[str, str], float] = {
    ("local", "all-MiniLM-L6-v2-onnx-int8"): 0.45,
}
#: The questions' languages a topic floor was measured in (absent: any). MiniLM is an
#: English model: German, French and Spanish questions about the English pages of
#: eval/answers reached only 0.20-0.55, the expected page first for 6 of 9 all the same,
#: so a question detected in another language is not judged by its floor (trusted,
#: as with an unmeasured embedder).
TOPIC_FLOOR_LANGUAGES: dict[tuple[str, str], tuple[str, ...]] = {
    ("local", "all-MiniLM-L6-v2-onnx-int8"): ("en",),
}

MODES = ("hybrid", "dense", "fulltext")


@attrs.frozen
class RetrievedHit(Hit):
    """A hit with the evidence that found it.

    ``vector_rank`` / ``lexical_rank`` / ``graph_rank``: its place (from 1) in the dense,
    full-text and knowledge-graph lists, None when it was not in that list;
    ``similarity``: cosine similarity to the question's vector; ``similarity_floor``: the
    embedder's floor, None when unmeasured.
    ``score`` is the fused RRF score.
    """

    vector_rank: int | None = None
    lexical_rank: int | None = None
    similarity: float | None = None
    graph_rank: int | None = None
    similarity_floor: float | None = None
    topic_floor: float | None = None  # TOPIC_FLOORS' value for the embedder
    topic_floor_languages: tuple[str, ...] = ()  # TOPIC_FLOOR_LANGUAGES' (empty: any)

    @property
    def on_topic(self) -> bool:
        """Surely about what the question asks (``TOPIC_FLOORS``), whatever its words."""
        return (
            self.topic_floor is not None
            and self.similarity is not None
            and self.similarity >= self.topic_floor
        )


def similarity_floor(space: EmbeddingSpace) -> float | None:
    return SIMILARITY_FLOORS.get((space.provider, space.model))


def topic_floor(space: EmbeddingSpace) -> float | None:
    return TOPIC_FLOORS.get((space.provider, space.model))


def topic_floor_languages(space: EmbeddingSpace) -> tuple[str, ...]:
    return TOPIC_FLOOR_LANGUAGES.get((space.provider, space.model), ())


def rrf_score(*ranks: int | None, k: int = RRF_K) -> float:
    """Reciprocal rank fusion of one item's ranks (from 1; None: absent from that list)."""
    return sum(1.0 / (k + rank) for rank in ranks if rank is not None)


def is_relevant(hit: Hit) -> bool:
    """Whether ``hit`` can ground an answer (see the module's docstring).

    A plain ``Hit`` carries no evidence and counts as relevant.
    """
    if not isinstance(hit, RetrievedHit):
        return True
    if hit.lexical_rank is not None or hit.graph_rank is not None:
        return True
    if hit.vector_rank is None or hit.similarity is None:
        return False
    return hit.similarity_floor is None or hit.similarity >= hit.similarity_floor


def relevant_hits(hits: Sequence[Hit]) -> list[Hit]:
    """The relevant hits, in their order; empty when nothing relevant was retrieved."""
    return [hit for hit in hits if is_relevant(hit)]


def candidate_depth(limit: int) -> int:
    """How deep each list goes for a search asking ``limit`` hits."""
    return max(CANDIDATES, limit)


#: pgvector's ``hnsw.ef_search`` by the number of chunks: the smallest tried whose dense
#: top 10 found 95 % of exact search's (recall@10; the index at pgvector's m 16 and
#: ef_construction 64, MiniLM's 384 dimensions). Measured with scripts/bench_chat.py
#: --recall, chosen on 100 SciFact claims, reported on 100 others: 10,000 chunks 0.968 at
#: 40 (0.978 at the depth, 50); 100,000 chunks 0.965 at 200 (0.897 at 50, 0.942 at 100);
#: 1,000,000 chunks 0.955 at 400 (0.827 at 50, 0.932 at 200, 0.951 at 320). In between,
#: interpolated on the logarithm of the count; beyond 1,000,000, the last step's slope
#: (unmeasured), up to pgvector's limit. A larger ef_search costs time at every size:
#: at 10,000 chunks, 400 even makes PostgreSQL prefer a sequential scan (46 ms).
EF_SEARCH_BY_CHUNKS = ((10_000, 40), (100_000, 200), (1_000_000, 400))
EF_SEARCH_LIMIT = 1_000  # pgvector's largest hnsw.ef_search


def ef_search(depth: int, chunks: float = 0) -> int:
    """pgvector's ``hnsw.ef_search`` for a dense list ``depth`` deep over about ``chunks``
    chunks (``EF_SEARCH_BY_CHUNKS``): HNSW returns at most ef_search rows a pass, so at
    least the depth."""
    points = EF_SEARCH_BY_CHUNKS
    if chunks <= points[0][0]:
        wanted = float(points[0][1])
    else:
        (low, at_low), (high, at_high) = next(
            ((a, b) for a, b in itertools.pairwise(points) if chunks <= b[0]), points[-2:]
        )
        step = math.log(chunks / low) / math.log(high / low)
        wanted = at_low + step * (at_high - at_low)
    return min(max(depth, math.ceil(wanted)), EF_SEARCH_LIMIT)
