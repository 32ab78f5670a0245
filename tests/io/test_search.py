"""Hybrid search against the real database: the SQL of ragio/knowledge/search.py, the
full-text column and statistics of migration 004, HNSW on vector and on halfvec."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import psycopg
import pytest

from ragcore.knowledge.chunking import Chunk
from ragcore.knowledge.documents import StoreDocument
from ragcore.knowledge.effects import SearchChunks
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.knowledge.retrieval import relevant_hits
from ragio.db.embedding_space import prepare_space
from ragio.db.migrations import apply_migrations
from ragio.knowledge import search, store

_serial = itertools.count()


def store_chunks(conn, name, texts, vectors):
    """One document with one chunk per text, stored by the service's own SQL."""
    digest = hashlib.sha256(f"{name}{next(_serial)}{texts}".encode()).hexdigest()
    doc = StoreDocument(
        name=name,
        content_hash=digest,
        text="\n\n".join(texts),
        chunks=tuple(Chunk(position=i, text=t) for i, t in enumerate(texts)),
        vectors=tuple(tuple(float(x) for x in v) for v in vectors),
    )
    return store.store_document(conn, doc).id


def unit(vector):
    vector = np.asarray(vector, dtype=np.float64)
    return vector / np.linalg.norm(vector)


def axis(dims, i, noise=0.0, rng=None):
    v = np.zeros(dims)
    v[i] = 1.0
    if noise:
        v += rng.normal(0, noise, dims)
    return unit(v)


@pytest.fixture
def conn(database_url, service):
    """A connection to the service's database (migrated and shaped by the service)."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


async def test_hybrid_finds_an_exact_product_code_that_dense_search_misses(service, conn):
    space = service.embedder.space
    dims = space.dimensions
    rng = np.random.default_rng(1)
    # Ten manuals close to the question's vector, none naming the code; the one that
    # names it has a vector far away (as when an embedder ignores an unknown code).
    for i in range(10):
        store_chunks(
            conn,
            f"manual-{i}.md",
            [f"The blender model B{i} has a two year warranty and a glass jug."],
            [axis(dims, 0, 0.2, rng)],
        )
    target = store_chunks(
        conn,
        "zx.md",
        ["The ZX-4417 pump is waterproof to 50 metres."],
        [axis(dims, 7)],
    )
    question, vector = "Is the ZX-4417 waterproof?", axis(dims, 0)

    dense = search.rank_chunks(conn, vector, question, 3, space, mode="dense")
    hybrid = search.rank_chunks(conn, vector, question, 3, space)

    assert target not in [h.document_id for h in dense]
    assert target in [h.document_id for h in hybrid]
    [found] = [h for h in hybrid if h.document_id == target]
    assert found.lexical_rank == 1 and found.vector_rank == 11  # last of all by vector
    assert "ZX-4417" in found.text
    # the chunks both lists found come with both ranks, and the fused order holds
    assert all(h.vector_rank is not None for h in hybrid if h.document_id != target)
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)


async def test_a_document_filter_stays_exact_under_hnsw_with_many_rows(service, conn):
    """Half the chunks sit right next to the question and are filtered out: an HNSW scan
    that stopped at ef_search rows would find nothing that passes the filter."""
    space = service.embedder.space
    dims = space.dimensions
    rng = np.random.default_rng(2)
    near = [
        store_chunks(
            conn,
            f"near-{d}.md",
            [f"Parcel note {d}-{i}" for i in range(40)],
            [axis(dims, 0, 0.02, rng) for _ in range(40)],
        )
        for d in range(15)
    ]
    far = [
        store_chunks(
            conn,
            f"far-{d}.md",
            [f"Parcel note {d}-{i}" for i in range(40)],
            [axis(dims, 1, 0.02, rng) for _ in range(40)],
        )
        for d in range(15)
    ]
    # the nearest of the allowed chunks, by a margin
    best = store_chunks(
        conn, "far-best.md", ["Parcel note best"], [unit(axis(dims, 0) + axis(dims, 1))]
    )
    allowed = [*far, best]
    conn.execute("VACUUM ANALYZE chunks")
    # At this size PostgreSQL would rather scan and sort; at a real size it takes the index.
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    vector = axis(dims, 0)

    plan = search.explain(conn, vector, "parcel note", 8, dims, allowed)
    assert "chunks_embedding_hnsw" in plan  # the filter is applied to an HNSW scan

    hits = search.rank_chunks(conn, vector, "parcel note", 8, space, allowed)
    assert len(hits) == 8
    assert {h.document_id for h in hits} <= set(allowed)
    assert hits[0].document_id == best
    assert any(h.lexical_rank is not None for h in hits)
    # the full-text side is filtered too
    lexical = search.rank_chunks(conn, vector, "parcel note", 8, space, allowed, mode="fulltext")
    assert len(lexical) == 8 and {h.document_id for h in lexical} <= set(allowed)

    dense = search.rank_chunks(conn, vector, "parcel note", 8, space, allowed, mode="dense")
    assert len(dense) == 8 and {h.document_id for h in dense} <= set(allowed)
    # unfiltered, the near documents win
    assert {h.document_id for h in search.rank_chunks(conn, vector, "", 8, space)} <= set(near)


async def test_a_filter_naming_no_document_finds_nothing(service, conn):
    space = service.embedder.space
    store_chunks(conn, "a.md", ["Opening hours"], [axis(space.dimensions, 0)])
    vector = axis(space.dimensions, 0)
    assert search.rank_chunks(conn, vector, "hours", 5, space, []) == []
    assert search.rank_chunks(conn, vector, "hours", 5, space, [987654]) == []


def test_the_halfvec_index_at_3072_dimensions_serves_hybrid_search(database_url):
    space = EmbeddingSpace("test", "fake-3072", 3072)
    rng = np.random.default_rng(3)
    with psycopg.connect(database_url, autocommit=True) as conn:
        apply_migrations(conn)
        prepare_space(conn, space)  # start-up: the column and its index for 3,072 dimensions
        indexdef = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_embedding_hnsw'"
        ).fetchone()[0]
        assert "halfvec(3072)" in indexdef
        vectors = [unit(rng.normal(size=3072)) for _ in range(60)]
        texts = [f"Invoice {i} was paid by card." for i in range(60)]
        texts[42] = "Invoice 42 was paid by bank transfer to account DE89-3704."
        doc = store_chunks(conn, "invoices.md", texts, vectors)
        conn.execute("SET enable_seqscan = off")  # a table this small would be scanned

        question = vectors[17] + rng.normal(0, 0.01, 3072)
        plan = search.explain(conn, question, "bank transfer", 5, 3072)
        assert "chunks_embedding_hnsw" in plan

        hits = search.rank_chunks(conn, question, "bank transfer", 5, space)
        assert {h.document_id for h in hits} == {doc}
        [nearest] = [h for h in hits if h.vector_rank == 1]
        assert nearest.text == texts[17] and nearest.lexical_rank is None
        assert nearest.similarity == pytest.approx(float(vectors[17] @ unit(question)), abs=1e-2)
        # the only chunk with the question's words, first in the full-text list, fused first
        assert hits[0].text == texts[42] and hits[0].lexical_rank == 1
        effect = SearchChunks(tuple(question.tolist()), "bank transfer", 5)
        assert [h.chunk_id for h in search.search(conn, effect, space)] == [
            h.chunk_id for h in hits
        ]


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Die Rücksendung ist innerhalb von 30 Tagen kostenlos.", "Ist die Rücksendung kostenlos?"),
        ("Les remboursements sont effectués sous cinq jours.", "Quand sont les remboursements?"),
        ("La devolución del producto es gratuita.", "¿Cómo funciona la devolución?"),
        ("Доставка по Москве бесплатная.", "Сколько стоит доставка?"),
    ],
)
async def test_full_text_matches_words_in_other_languages(service, conn, text, question):
    space = service.embedder.space
    dims = space.dimensions
    store_chunks(conn, "other.md", ["We ship worldwide."], [axis(dims, 0)])
    doc = store_chunks(conn, "faq.md", [text], [axis(dims, 5)])
    hits = search.rank_chunks(conn, axis(dims, 0), question, 2, space, mode="fulltext")
    assert [h.document_id for h in hits] == [doc]


async def test_questions_with_query_syntax_or_only_stop_words_are_just_text(service, conn):
    space = service.embedder.space
    dims = space.dimensions
    doc = store_chunks(conn, "q.md", ["O'Brien's price: 5 & more | (sale)!"], [axis(dims, 0)])
    for question in ["O'Brien's price: 5 & more | (sale)! \\ :* <-> 'x'", "what is the", "?"]:
        hits = search.rank_chunks(conn, axis(dims, 0), question, 3, space)
        assert [h.document_id for h in hits] == [doc]
    [stop_words_only] = search.rank_chunks(conn, axis(dims, 0), "what is the", 3, space)
    assert stop_words_only.lexical_rank is None and stop_words_only.vector_rank == 1


async def test_the_term_statistics_follow_inserts_updates_and_deletes(service, conn):
    dims = service.embedder.space.dimensions

    def exact(conn):
        stats = dict(conn.execute("SELECT lexeme, chunks FROM fulltext_terms").fetchall())
        expected = dict(
            conn.execute("SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM chunks')")
        )
        totals = conn.execute("SELECT chunks, words FROM fulltext_totals").fetchone()
        counted = conn.execute(
            "SELECT count(*), coalesce(sum(search_length), 0) FROM chunks"
        ).fetchone()
        return stats == expected and tuple(totals) == tuple(counted)

    first = store_chunks(
        conn, "a.md", ["Red bikes are fast.", "Blue bikes are slow."], [axis(dims, 0)] * 2
    )
    store_chunks(conn, "b.md", ["Red cars are loud bikes."], [axis(dims, 1)])
    assert exact(conn)
    assert conn.execute("SELECT chunks FROM fulltext_terms WHERE lexeme = 'bike'").fetchone() == (
        3,
    )
    conn.execute("UPDATE chunks SET text = 'Green trains' WHERE document_id = %s", (first,))
    assert exact(conn)
    store.delete_documents(conn, first)
    assert exact(conn)
    assert conn.execute(
        "SELECT count(*) FROM fulltext_terms WHERE lexeme = 'green'"
    ).fetchone() == (0,)


async def test_the_local_embedder_tells_related_from_unrelated_questions(service, conn):
    """Dense hits below the embedder's floor do not count as relevant: an unrelated
    question finds nothing to answer from, a paraphrase with no shared word does."""
    space = service.embedder.space
    texts = [
        "Customers can return any item within 30 days of delivery for a full refund.",
        "The shop opens at 9 am and closes at 6 pm, Monday to Saturday.",
    ]
    store_chunks(conn, "faq.md", texts, await service.embedder.embed(texts, "document"))

    async def relevant(question):
        [vector] = await service.embedder.embed([question], "query")
        return relevant_hits(search.rank_chunks(conn, vector, question, 8, space))

    assert await relevant("Who won the football world cup in 2018?") == []
    [paraphrase] = await relevant("Can I send back something I bought?")
    assert paraphrase.text == texts[0] and paraphrase.lexical_rank is None


async def test_a_name_is_mentioned_when_a_chunk_or_a_documents_name_holds_it(service, conn):
    dims = service.embedder.space.dimensions
    store_chunks(
        conn,
        "AcmePizza-about.md",
        [
            "Our php-fpm pool and pm.max_children are tuned.",
            "Backups go to Dropbox nightly. Try the files in /srv first.",
        ],
        [axis(dims, 0), axis(dims, 1)],
    )
    asked = ("php-fpm", "fpm", "pm.max_children", "dropbox", "acmepizza", "quickbooks", "try_files")
    assert search.mentioned(conn, asked) == {
        "php-fpm",
        "fpm",
        "pm.max_children",
        "dropbox",
        "acmepizza",  # in the document's name only
    }  # not "try_files": "try" and "files" are there, but not one after the other


async def test_the_unfiltered_search_is_planned_once_a_connection_and_finds_the_same(service, conn):
    space = service.embedder.space
    rng = np.random.default_rng(11)
    vectors = [unit(rng.normal(size=space.dimensions)) for _ in range(40)]
    texts = [f"Parcel {i} leaves the depot in Ghent on weekday mornings." for i in range(40)]
    store_chunks(conn, "parcels.md", texts, vectors)
    question = vectors[7] + rng.normal(0, 0.01, space.dimensions)
    first = search.rank_chunks(conn, question, "parcel depot Ghent", 5, space)
    for _ in range(7):  # psycopg prepares it at the fifth run; then its one plan serves
        assert search.rank_chunks(conn, question, "parcel depot Ghent", 5, space) == first
    [(generic, custom)] = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
        ("%tsvector_to_array%",),
    ).fetchall()
    assert generic >= 2 and custom == 0
    assert len(first) == 5
    assert [hit.text for hit in first if hit.vector_rank == 1] == [texts[7]]
