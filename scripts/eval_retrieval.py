#!/usr/bin/env python3
"""Retrieval quality of the real service code on a BEIR-format folder.

    .venv/bin/python scripts/eval_retrieval.py ../shared/datasets/scifact
    .venv/bin/python scripts/eval_retrieval.py ../shared/datasets/scifact \
        --lexical bm25 ts_rank --text-config english simple --floors

For each local embedder asked for (``--embedder``, default: all), it embeds the
corpus with ``ragio.providers.local.LocalEmbedder`` (cached under ``--cache``,
so a second run skips that), stores every document as one chunk
(``title + " " + text``, as BEIR and MTEB encode them) through
``ragio.knowledge.store.store_document`` in an embedded PostgreSQL migrated by
``ragio.db.migrations``, then asks every test query through
``ragio.knowledge.search`` in each mode, dense, full-text and hybrid, and prints
nDCG@10 and recall@10 as BEIR computes them (binary relevance, log2 discount,
ideal ranking from the qrels), with each query's search time.

Measurement variants of the full-text side: ``--lexical ts_rank`` (PostgreSQL's
own ranking instead of BM25), ``--text-config simple`` (the column rebuilt with
that configuration after the migrations), ``--budget`` (the candidate budget of
``ragcore.knowledge.retrieval``). ``--floors`` prints the similarity figures the
relevance floors come from.

``--rerank N [N ...]`` reorders the top N hybrid candidates by the local reranker
(``scripts/rerankers.py``) and prints nDCG@10 of that order, with the reranker's own
time per question (p50 / p95, on the first ``--rerank-timed`` questions: the question's
and the N passages' features, then the scores). The passages' features are cached under
``--cache`` as the vectors are, so the nDCG figures of a second run come quickly.

``--graph`` also builds the knowledge graph (``ragio.graph``, PostgreSQL store) over the
stored corpus, prints what that cost (seconds, entities, mentions, relations), and
measures hybrid search with the graph's list fused in, for each ``--graph-weight`` and
``--graph-hops``; then the same on the multi-hop set (``--multihop``, default
eval/multihop: two-page questions over the Debian pages of eval/answers, ingested through
the service's own reader and chunker), where it prints, per configuration, how often the
answer page and both pages are among the first 10 chunks' pages, and nDCG@10 over pages.

    .venv/bin/python scripts/eval_retrieval.py ../shared/datasets/scifact \
        --embedder minilm --mode hybrid --graph

The database lives under ``--cache`` too and is rebuilt on every run (its
schema follows the code); only the vectors are reused.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psycopg
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from ragcore.chat.pipeline import SEARCH_LIMIT  # noqa: E402
from ragcore.knowledge.chunking import Chunk  # noqa: E402
from ragcore.knowledge.documents import StoreDocument  # noqa: E402
from ragcore.knowledge.entities import question_keys  # noqa: E402
from ragcore.knowledge.graph import ReachGraph, rank_graph_chunks  # noqa: E402
from ragcore.knowledge.retrieval import candidate_depth, rrf_score  # noqa: E402
from ragio.db.embedded import EmbeddedPostgres  # noqa: E402
from ragio.db.embedding_space import prepare_space  # noqa: E402
from ragio.db.migrations import apply_migrations  # noqa: E402
from ragio.db.pool import Database  # noqa: E402
from ragio.graph.postgres import PostgresGraphStore  # noqa: E402
from ragio.graph.service import Graph  # noqa: E402
from ragio.knowledge import search  # noqa: E402
from ragio.knowledge.store import store_document  # noqa: E402
from ragio.providers import minilm_graph  # noqa: E402
from ragio.providers.local import MODELS, LocalEmbedder  # noqa: E402
from rerankers import RERANKERS, load_reranker  # noqa: E402

K = 10
MODES = ("dense", "fulltext", "hybrid")  # the order of the table


# ------------------------------------------------------------------ the dataset


def load_beir(folder: Path, split: str) -> tuple[dict, dict, dict]:
    """corpus {id: text}, queries {id: text} of the split, qrels {qid: {docid: score}}."""
    corpus = {}
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            corpus[doc["_id"]] = (doc.get("title") or "") + " " + doc["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        next(reader)  # header
        for row in reader:
            if len(row) < 3:
                continue
            qid, docid, score = row[0].strip(), row[1].strip(), int(row[2].strip())
            if score > 0:
                qrels.setdefault(qid, {})[docid] = score
    queries = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            query = json.loads(line)
            if query["_id"] in qrels:
                queries[query["_id"]] = query["text"]
    return corpus, queries, qrels


# ------------------------------------------------------------------ metrics


def ndcg_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int = K) -> float:
    """BEIR's nDCG@k (pytrec_eval): gain = relevance grade, discount log2(rank + 1)."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int = K) -> float:
    found = sum(1 for doc in ranked[:k] if relevant.get(doc, 0) > 0)
    total = sum(1 for grade in relevant.values() if grade > 0)
    return found / total if total else 0.0


# ------------------------------------------------------------------ embedding, cached


def fingerprint(ids: Sequence[str], texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for key, text in zip(ids, texts, strict=True):
        digest.update(key.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


async def embed_cached(
    embedder: LocalEmbedder, ids: list[str], texts: list[str], path: Path, purpose: str
) -> tuple[np.ndarray, float | None]:
    """Vectors for ``texts`` from ``path`` (.npy) when its fingerprint matches, else embedded
    now and saved. Returns the vectors and the seconds spent embedding (None: cached)."""
    stamp = path.with_suffix(".sha256")
    # the texts, and how the local MiniLM's graph was rewritten (its vectors change with it)
    wanted = fingerprint([*ids, "graph"], [*texts, minilm_graph.RECIPE])
    if path.exists() and stamp.exists() and stamp.read_text() == wanted:
        return np.load(path), None
    started = time.perf_counter()
    vectors: list[list[float]] = []
    step = 256
    for start in range(0, len(texts), step):
        vectors += await embedder.embed(texts[start : start + step], purpose)
        print(f"\r  embedded {len(vectors)}/{len(texts)} {purpose}s", end="", file=sys.stderr)
    print(file=sys.stderr)
    seconds = time.perf_counter() - started
    array = np.asarray(vectors, dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    stamp.write_text(wanted)
    return array, seconds


# ------------------------------------------------------------------ the database


async def fresh_database(server: EmbeddedPostgres, name: str) -> str:
    """An empty database ``name`` on the embedded server (dropped first if it exists)."""

    def create() -> str:
        server.drop_database(name)
        return server.create_database(name)

    return await trio.to_thread.run_sync(create)


async def load_corpus(
    database: Database, embedder: LocalEmbedder, corpus: dict[str, str], vectors: np.ndarray
) -> float:
    """Migrate, shape for the embedder and store one chunk per document; returns seconds."""
    started = time.perf_counter()
    await database.run(apply_migrations)
    await database.run(prepare_space, embedder.space)
    for n, ((doc_id, text), vector) in enumerate(zip(corpus.items(), vectors, strict=True)):
        doc = StoreDocument(
            name=doc_id,
            content_hash=hashlib.sha256(f"{doc_id}\0{text}".encode()).hexdigest(),
            text=text,
            chunks=(Chunk(position=0, text=text),),
            vectors=(tuple(float(x) for x in vector),),
        )
        await database.run(store_document, doc)
        if n % 500 == 0:
            print(f"\r  stored {n}/{len(corpus)} documents", end="", file=sys.stderr)
    print(f"\r  stored {len(corpus)}/{len(corpus)} documents", file=sys.stderr)
    await database.run(lambda conn: conn.execute("VACUUM ANALYZE chunks"))
    return time.perf_counter() - started


def use_text_config(conn: psycopg.Connection, config: str) -> None:
    """Measurement only: rebuild the full-text column and its statistics with ``config``."""
    config = {"english": "english", "simple": "simple"}[config]  # formatted into DDL
    with conn.transaction():
        conn.execute("ALTER TABLE chunks DROP COLUMN search_vector, DROP COLUMN search_length")
        conn.execute(
            f"""ALTER TABLE chunks
                ADD COLUMN search_vector tsvector
                    GENERATED ALWAYS AS (to_tsvector('{config}'::regconfig, text)) STORED,
                ADD COLUMN search_length integer GENERATED ALWAYS AS
                    (fulltext_word_count(to_tsvector('{config}'::regconfig, text))) STORED"""
        )
        conn.execute("CREATE INDEX chunks_search_vector_gin ON chunks USING gin (search_vector)")
        conn.execute("TRUNCATE fulltext_terms")
        conn.execute(
            "INSERT INTO fulltext_terms"
            " SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM chunks')"
        )
        conn.execute(
            "UPDATE fulltext_totals SET chunks = (SELECT count(*) FROM chunks),"
            " words = (SELECT coalesce(sum(search_length), 0) FROM chunks)"
        )
    conn.execute("ANALYZE chunks")


# ------------------------------------------------------------------ evaluation


async def evaluate(
    database: Database,
    embedder: LocalEmbedder,
    queries: dict[str, str],
    query_vectors: np.ndarray,
    qrels: dict,
    mode: str,
    graph: tuple[Graph, float, int] | None = None,
    **options: object,
) -> dict[str, float]:
    """nDCG@10, recall@10 and the search's time over ``queries``; with ``graph`` (the graph,
    its weight, its hops), the hybrid search with the graph's list fused in."""
    ndcg = recall = 0.0
    seconds: list[float] = []
    for (qid, text), vector in zip(queries.items(), query_vectors, strict=True):
        started = time.perf_counter()
        if graph is not None:
            store, weight, hops = graph
            hits = await graph_search(
                database, store, text, vector.tolist(), K, embedder.space, weight, hops
            )
        else:
            hits = await database.run(
                search.rank_chunks,
                vector.tolist(),
                text,
                K,
                embedder.space,
                None,
                mode,
                *(
                    options.get(name, default)
                    for name, default in (
                        ("lexical", "bm25"),
                        ("text_config", search.TEXT_SEARCH_CONFIG),
                        ("lexical_budget", search.LEXICAL_BUDGET),
                    )
                ),
            )
        seconds.append(time.perf_counter() - started)
        ranked = [hit.document_name for hit in hits]
        ndcg += ndcg_at_k(ranked, qrels[qid])
        recall += recall_at_k(ranked, qrels[qid])
    n = len(queries)
    return {
        "ndcg": ndcg / n,
        "recall": recall / n,
        "ms_p50": 1000 * float(np.percentile(seconds, 50)),
        "ms_p95": 1000 * float(np.percentile(seconds, 95)),
    }


def passage_features(reranker: object, ids: list[str], texts: list[str], path: Path) -> np.ndarray:
    """The reranker's features of every passage, from ``path`` when its fingerprint matches."""
    stamp = path.with_suffix(".sha256")
    wanted = fingerprint(ids, texts)
    if path.exists() and stamp.exists() and stamp.read_text() == wanted:
        return np.load(path)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    features: np.ndarray | None = None
    step = 16
    for start in range(0, len(order), step):
        batch = order[start : start + step]
        rows = reranker.features([texts[i] for i in batch])  # type: ignore[attr-defined]
        if features is None:
            features = np.zeros((len(texts), rows.shape[1]), dtype=np.float32)
        features[batch] = rows
        print(f"\r  reranker features {start + len(batch)}/{len(texts)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    assert features is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, features)
    stamp.write_text(wanted)
    return features


async def evaluate_rerank(
    database: Database,
    embedder: LocalEmbedder,
    queries: dict[str, str],
    query_vectors: np.ndarray,
    qrels: dict,
    corpus: dict[str, str],
    reranker: object,
    features: np.ndarray,
    depths: Sequence[int],
    timed: int,
) -> dict[int, dict[str, float]]:
    """nDCG@10 and recall@10 of the top N hybrid hits reordered by the reranker, per N,
    and the reranker's own time per question (measured on the first ``timed`` questions,
    features computed then, not read from the cache)."""
    row_of = {doc_id: row for row, doc_id in enumerate(corpus)}
    deepest = max(depths)
    totals = {n: {"ndcg": 0.0, "recall": 0.0, "mixed_ndcg": 0.0} for n in depths}
    seconds: dict[int, list[float]] = {n: [] for n in depths}
    for number, ((qid, text), vector) in enumerate(
        zip(queries.items(), query_vectors, strict=True)
    ):
        hits = await database.run(
            search.rank_chunks,
            vector.tolist(),
            text,
            deepest,
            embedder.space,
            None,
            "hybrid",
            "bm25",
            search.TEXT_SEARCH_CONFIG,
            search.LEXICAL_BUDGET,
        )
        names = [hit.document_name for hit in hits]
        question = reranker.features([text])[0]  # type: ignore[attr-defined]
        for n in depths:
            top = names[:n]
            if number < timed:
                started = time.perf_counter()
                reranker.score(text, [corpus[name] for name in top])  # type: ignore[attr-defined]
                seconds[n].append(time.perf_counter() - started)
            scores = reranker.score_features(  # type: ignore[attr-defined]
                question, features[[row_of[name] for name in top]]
            )
            order = sorted(range(len(top)), key=lambda i: (-float(scores[i]), i))
            ranked = [top[i] for i in order]
            totals[n]["ndcg"] += ndcg_at_k(ranked, qrels[qid])
            totals[n]["recall"] += recall_at_k(ranked, qrels[qid])
            # the reranker as a third vote: RRF of the fused rank and the reranker's rank
            place = {i: rank for rank, i in enumerate(order, start=1)}
            mixed = sorted(range(len(top)), key=lambda i: (-rrf_score(i + 1, place[i]), i))
            totals[n]["mixed_ndcg"] += ndcg_at_k([top[i] for i in mixed], qrels[qid])
    count = len(queries)
    return {
        n: {
            "ndcg": totals[n]["ndcg"] / count,
            "recall": totals[n]["recall"] / count,
            "mixed_ndcg": totals[n]["mixed_ndcg"] / count,
            "ms_p50": 1000 * float(np.percentile(seconds[n], 50)) if seconds[n] else math.nan,
            "ms_p95": 1000 * float(np.percentile(seconds[n], 95)) if seconds[n] else math.nan,
        }
        for n in depths
    }


OFF_TOPIC = [
    "What time does the shop open on Saturdays?",
    "How do I return a pair of shoes I bought online?",
    "Can I pay my invoice by bank transfer?",
    "Do you deliver pizza to the city centre?",
    "What is the capital of France?",
    "Who won the football world cup in 2018?",
    "How much does a haircut cost?",
    "Is there parking near the office?",
    "What is your refund policy for concert tickets?",
    "Can I change the colour of my new car before delivery?",
    "How do I reset my email password?",
    "When is the next train to Berlin?",
    "Which wine goes well with fish?",
    "How many vacation days do employees get?",
    "What is the warranty on a washing machine?",
    "Do you offer gift cards?",
    "Where can I download my payslip?",
    "What are the opening hours on public holidays?",
    "How do I book a table for six people?",
    "Can I bring my dog into the store?",
]


async def similarity_report(
    embedder: LocalEmbedder,
    queries: dict[str, str],
    query_vectors: np.ndarray,
    corpus_vectors: np.ndarray,
) -> str:
    """Best cosine similarity in the corpus for its own questions and for unrelated ones."""
    off = np.asarray(await embedder.embed(OFF_TOPIC, "query"), dtype=np.float32)
    on_best = (query_vectors @ corpus_vectors.T).max(axis=1)
    off_best = (off @ corpus_vectors.T).max(axis=1)

    def q(values: np.ndarray) -> str:
        return " / ".join(f"{np.percentile(values, p):.2f}" for p in (5, 50, 95))

    return (
        f"  best similarity, p5 / p50 / p95: questions about the corpus {q(on_best)}; "
        f"unrelated questions {q(off_best)} (max {off_best.max():.2f})"
    )


# ------------------------------------------------------------------ the knowledge graph


async def build_graph(database: Database) -> tuple[Graph, float, str]:
    """The graph over every stored document, as the service builds it; its seconds and counts."""
    graph = Graph(PostgresGraphStore(database.pool), database, timeout_seconds=3600)
    started = time.perf_counter()
    done = await graph.level()
    seconds = time.perf_counter() - started
    counts = await graph.counts()
    summary = (
        f"{done.recorded} documents, {counts.entities} entities, {counts.mentions} mentions, "
        f"{counts.relations} relations"
    )
    return graph, seconds, summary


async def graph_search(
    database: Database,
    graph: Graph,
    text: str,
    vector: Sequence[float],
    limit: int,
    space: object,
    weight: float,
    hops: int,
) -> list:
    """The service's search with the graph's list fused in (``ragcore.chat.pipeline``)."""
    ranked: list[int] = []
    keys = question_keys(text) if weight > 0 else ()
    if keys:
        reached = await graph.reach(ReachGraph(tuple(keys), hops))
        ranked = rank_graph_chunks(reached, candidate_depth(limit))
    return await database.run(
        lambda conn: search.rank_chunks(
            conn, list(vector), text, limit, space, graph_chunk_ids=ranked, graph_weight=weight
        )
    )


def graph_variants(args: argparse.Namespace) -> list[tuple[float, int]]:
    """(weight, hops) to measure: without the graph first."""
    return [(0.0, 0)] + [(w, h) for h in args.graph_hops for w in args.graph_weight if w > 0]


def table_row(key: str, mode: str, label: str, result: dict[str, float]) -> str:
    """One row of the printed table: the embedder, the search, its full-text side, figures."""
    return (
        f"| {key} | {mode} | {label} | {result['ndcg']:.3f} | {result['recall']:.3f} "
        f"| {result['ms_p50']:.1f} | {result['ms_p95']:.1f} |"
    )


MULTIHOP_HEAD = (
    "\n| set | search | answer page in top 10 | both pages in top 10 "
    "| both among the 8 sources | nDCG@10 (pages) |"
    "\n|---|---|---|---|---|---|\n"
)


def graph_label(weight: float, hops: int) -> str:
    return "without the graph" if weight == 0 else f"graph weight {weight:g}, {hops} hop(s)"


async def run_multihop(args: argparse.Namespace, server: EmbeddedPostgres) -> list[str]:
    """The multi-hop set (``--multihop``) with and without the graph; the table's rows."""
    import eval_answers
    from ragcore.knowledge.documents import prepare_document, store_new_documents
    from ragcore.settings import load_settings
    from ragio.knowledge.files import read_document
    from ragio.runner import run as run_pipeline
    from ragio.startup import open_service

    folder = Path(args.multihop)
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    files = eval_answers.corpus_files()
    name = f"eval_multihop_{uuid.uuid4().hex[:6]}"
    url = await fresh_database(server, name)
    settings = load_settings(
        {
            "DATABASE_URL": url,
            "DATA_DIR": str(Path(args.cache) / "multihop-data"),
            "EMBEDDING_PROVIDER": "local",
            "LLM_PROVIDER": "extractive",
        }
    )
    rows = []
    try:
        async with open_service(settings) as svc:
            await svc.embedder.ready()  # type: ignore[attr-defined]  # one graph for every vector
            started = time.perf_counter()
            docs = []
            for doc_name, path in files.items():
                text, fmt, size = await read_document(
                    path, settings.max_upload_bytes, settings.max_document_read_seconds
                )
                docs.append(
                    prepare_document(doc_name, text, content_type=fmt.content_type, size_bytes=size)
                )
            for start in range(0, len(docs), 16):
                await run_pipeline(store_new_documents(docs[start : start + 16]), svc)
            ingest_seconds = time.perf_counter() - started
            chunks = await svc.database.run(
                lambda conn: conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            )
            graph, graph_seconds, summary = await build_graph(svc.database)
            print(
                f"\nmulti-hop set: {len(questions)} questions over {len(files)} pages, "
                f"{chunks} chunks; ingesting them took {ingest_seconds:.1f} s (reading, "
                f"chunking, embedding, storing), the graph {graph_seconds:.1f} s more "
                f"({summary})"
            )
            vectors = [(await svc.embedder.embed([q["question"]], "query"))[0] for q in questions]
            for weight, hops in graph_variants(args):
                answer = both = sources = ndcg = 0.0
                for q, vector in zip(questions, vectors, strict=True):
                    hits = await graph_search(
                        svc.database,
                        graph,
                        q["question"],
                        vector,
                        K,
                        svc.embedder.space,
                        weight,
                        hops,
                    )
                    pages = list(dict.fromkeys(hit.document_name for hit in hits))
                    relevant = {page: 1 for page in q["expected_pages"]}
                    answer += q["answer_page"] in pages
                    both += all(page in pages for page in q["expected_pages"])
                    sent = {hit.document_name for hit in hits[:SEARCH_LIMIT]}
                    sources += all(page in sent for page in q["expected_pages"])
                    ndcg += ndcg_at_k(pages, relevant)
                n = len(questions)
                row = (
                    f"| multi-hop | {graph_label(weight, hops)} | {answer / n:.1%} "
                    f"| {both / n:.1%} | {sources / n:.1%} | {ndcg / n:.3f} |"
                )
                print(row, flush=True)
                rows.append(row)
    finally:
        await trio.to_thread.run_sync(server.drop_database, name)
    return rows


async def run(args: argparse.Namespace) -> None:
    if args.multihop_only:
        server = EmbeddedPostgres(Path(args.cache) / "pg")
        await trio.to_thread.run_sync(server.start)
        try:
            multihop = await run_multihop(args, server)
        finally:
            await trio.to_thread.run_sync(server.stop)
        print(MULTIHOP_HEAD + "\n".join(multihop))
        return
    corpus, queries, qrels = load_beir(Path(args.dataset), args.split)
    print(
        f"{args.dataset}: {len(corpus)} documents, {len(queries)} {args.split} queries, "
        f"{sum(len(v) for v in qrels.values())} judgements\n"
    )
    cache = Path(args.cache)
    server = EmbeddedPostgres(cache / "pg")
    await trio.to_thread.run_sync(server.start)
    rows: list[str] = []
    try:
        for key in args.embedder:
            embedder = LocalEmbedder(key, cache / "models")  # the faster graph, built once
            await embedder.ready()  # one graph for every vector
            model = embedder.space.model
            print(f"== {key} ({model}, {embedder.space.dimensions} dimensions)")
            folder = cache / model
            corpus_vectors, doc_seconds = await embed_cached(
                embedder, list(corpus), list(corpus.values()), folder / "corpus.npy", "document"
            )
            query_vectors, _ = await embed_cached(
                embedder, list(queries), list(queries.values()), folder / "queries.npy", "query"
            )
            timing = folder / "corpus.seconds"
            if doc_seconds is not None:
                timing.write_text(f"{doc_seconds:.1f}")
            measured = timing.read_text() if timing.exists() else "?"
            cached = " (vectors from the cache)" if doc_seconds is None else ""
            print(f"  embedding the corpus took {measured} s{cached}")
            if args.floors:
                print(await similarity_report(embedder, queries, query_vectors, corpus_vectors))

            name = f"eval_{key}_{uuid.uuid4().hex[:6]}"
            url = await fresh_database(server, name)
            database = Database(url, max_connections=2)
            await database.open()
            try:
                seconds = await load_corpus(database, embedder, corpus, corpus_vectors)
                print(f"  stored {len(corpus)} chunks in {seconds:.0f} s")
                current = search.TEXT_SEARCH_CONFIG  # as migration 004 made it
                for config, lexical, budget, mode in variants(args):
                    if config != current:
                        await database.run(use_text_config, config)
                        current = config
                    result = await evaluate(
                        database,
                        embedder,
                        queries,
                        query_vectors,
                        qrels,
                        mode,
                        lexical=lexical,
                        text_config=config,
                        lexical_budget=budget,
                    )
                    label = "-" if mode == "dense" else f"{lexical} {config}"
                    if mode != "dense" and lexical == "bm25" and budget != search.LEXICAL_BUDGET:
                        label += f" budget {budget}"
                    row = table_row(key, mode, label, result)
                    print(row, flush=True)
                    rows.append(row)
                if args.graph:
                    graph, graph_seconds, summary = await build_graph(database)
                    print(
                        f"  the knowledge graph took {graph_seconds:.1f} s more than storing "
                        f"the corpus ({seconds:.0f} s): {summary}"
                    )
                    for weight, hops in graph_variants(args):
                        result = await evaluate(
                            database,
                            embedder,
                            queries,
                            query_vectors,
                            qrels,
                            "hybrid",
                            graph=(graph, weight, hops),
                        )
                        row = table_row(
                            key,
                            f"hybrid, {graph_label(weight, hops)}",
                            f"bm25 {search.TEXT_SEARCH_CONFIG}",
                            result,
                        )
                        print(row, flush=True)
                        rows.append(row)
                if args.rerank:
                    reranker = await trio.to_thread.run_sync(load_reranker, args.reranker)
                    features = await trio.to_thread.run_sync(
                        passage_features,
                        reranker,
                        list(corpus),
                        list(corpus.values()),
                        cache / args.reranker / "corpus.npy",
                    )
                    results = await evaluate_rerank(
                        database,
                        embedder,
                        queries,
                        query_vectors,
                        qrels,
                        corpus,
                        reranker,
                        features,
                        args.rerank,
                        args.rerank_timed,
                    )
                    for n, result in results.items():
                        row = table_row(
                            key,
                            f"hybrid + {args.reranker} top {n}",
                            f"bm25 {search.TEXT_SEARCH_CONFIG}",
                            result,
                        )
                        print(row, flush=True)
                        rows.append(row)
                        print(
                            f"  top {n}, RRF of the fused and the reranker's ranks: "
                            f"nDCG@10 {result['mixed_ndcg']:.3f}",
                            flush=True,
                        )
            finally:
                await database.close()
                await trio.to_thread.run_sync(server.drop_database, name)
        multihop = await run_multihop(args, server) if args.graph and args.multihop else []
    finally:
        await trio.to_thread.run_sync(server.stop)
    print(
        "\n| embedder | mode | full-text side | nDCG@10 | recall@10 | ms p50 | ms p95 |\n"
        "|---|---|---|---|---|---|---|"
    )
    print("\n".join(rows))
    if multihop:
        print(MULTIHOP_HEAD + "\n".join(multihop))


def variants(args: argparse.Namespace) -> list[tuple[str, str, int, str]]:
    """(text configuration, lexical ranking, budget, mode) to measure, grouped by
    configuration; dense search once (it uses none of the others)."""
    found = []
    if "dense" in args.mode:
        found.append((args.text_config[0], "bm25", search.LEXICAL_BUDGET, "dense"))
    for config in args.text_config:
        for lexical in args.lexical:
            # ts_rank is PostgreSQL's ranking as it comes: over every term
            budgets = args.budget if lexical == "bm25" else [10**9]
            for budget in budgets:
                for mode in args.mode:
                    if mode != "dense":
                        found.append((config, lexical, budget, mode))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="a BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/")
    parser.add_argument(
        "--cache",
        default=str(ROOT / "data" / "eval-cache"),
        help="folder for the embedded corpus and the database (default %(default)s)",
    )
    parser.add_argument("--split", default="test")
    parser.add_argument("--embedder", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--mode", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--lexical",
        nargs="+",
        choices=("bm25", "ts_rank"),
        default=["bm25"],
        help="full-text ranking: BM25 (the service's) or PostgreSQL's ts_rank",
    )
    parser.add_argument(
        "--text-config",
        nargs="+",
        choices=("english", "simple"),
        default=["english"],
        help="text search configuration; english is the service's",
    )
    parser.add_argument(
        "--budget",
        nargs="+",
        type=int,
        default=[search.LEXICAL_BUDGET],
        help="full-text candidate budget (see ragcore.knowledge.retrieval)",
    )
    parser.add_argument(
        "--floors",
        action="store_true",
        help="also print the similarity of the best chunk for questions about "
        "the corpus and for unrelated ones",
    )
    parser.add_argument(
        "--rerank",
        nargs="+",
        type=int,
        default=[],
        help="also reorder the top N hybrid hits by the local reranker, for each N "
        "(its ms: the reranker's own time per question)",
    )
    parser.add_argument("--reranker", choices=list(RERANKERS), default=next(iter(RERANKERS)))
    parser.add_argument(
        "--rerank-timed",
        type=int,
        default=50,
        help="questions whose reranking is timed with every feature computed (default %(default)s)",
    )
    parser.add_argument(
        "--graph",
        action="store_true",
        help="also build the knowledge graph and measure search with its list, on the "
        "dataset and on the multi-hop set",
    )
    parser.add_argument("--graph-weight", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--graph-hops", nargs="+", type=int, choices=(1, 2), default=[1, 2])
    parser.add_argument(
        "--multihop",
        default=str(ROOT / "eval" / "multihop"),
        help="the multi-hop set for --graph (default %(default)s; blank: skip it)",
    )
    parser.add_argument(
        "--multihop-only",
        action="store_true",
        help="measure the multi-hop set alone (the dataset is not read)",
    )
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
