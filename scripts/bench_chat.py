#!/usr/bin/env python3
"""Time the service spends on a chat question around the provider, at 10,000 and 100,000 chunks.

    .venv/bin/python scripts/bench_chat.py
    .venv/bin/python scripts/bench_chat.py --pg shared_buffers=1GB --prewarm
    .venv/bin/python scripts/bench_chat.py --chunks 10000 --questions 150 --role support
    .venv/bin/python scripts/bench_chat.py --chunks 10000 --trace
    .venv/bin/python scripts/bench_chat.py --chunks 1000000 --recall --cache /tmp/bench-cache-1m

The real service answers POST /chat over HTTP (Hypercorn on 127.0.0.1, httpx): language
detection, the question's embedding with the local embedder, hybrid search in
PostgreSQL, trimming, the prompt, citations. Only the provider is replaced, by one that
answers at once, so what is timed is everything but the provider's own latency. p50 and
p95 over SciFact claims (other questions with ``--dataset``), each measurement with
questions not asked before, after a warm-up; also the parts: embedding, the hybrid
search statement, language detection, and the pipeline without HTTP; and POST
/v1/chat/completions, with one question and with a follow-up after one exchange (the
history read, the follow-up joined to the question before it): the difference is the
cost of follow-ups offline. With ``--role``, also POST /chat as that role, each question
from another ``user``: the role context is fetched and the answer recorded for learning
(``ragcore.employees.learning``). POST /chat/stream and a streamed POST
/v1/chat/completions: the time to the first text, from sending the request to the first
event with text as the client reads it (the provider streams its words at once).
With ``--live``, also "where is my order N?" with a
live-data action on a PostgreSQL table of 100,000 orders (on a second embedded server,
the owner's: a data source never reads the service's own): without the action, with it
uncached (a new order each time: the query runs on a new connection), and cached (asked
again within 5 minutes); the differences are the latency a live action adds. With
``--trace``, traced (OTEL_EXPORTER_OTLP_ENDPOINT): every span sent over OTLP/HTTP to a
receiver in a thread that keeps none; beside a run without it, what tracing costs.
With ``--recall``, after the timings: recall@10 of the dense list through the HNSW
index (the service's statement, its depth, ef_search and iterative scan) against exact
search (a sequential scan, kept under ``--cache``), at the service's ef_search and at
each of ``--ef-search``, with the hybrid statement's timing at each; chosen on 100
held-out claims, reported on 100 others.

The knowledge base is synthetic but shaped like a real one: chunks of 4 to 8
sentences drawn from SciFact abstracts (realistic words and term statistics),
each with a vector mixed from the real MiniLM vectors of its abstracts (realistic
neighbourhoods for HNSW). Chunks are loaded with COPY (so the full-text
statistics triggers run once per load) and the HNSW index is built afterwards by
the service's own start-up code. Databases are kept under ``--cache`` and reused.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
import trio
from cryptography.fernet import Fernet
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tests.io.conftest import serve_app  # noqa: E402
from tests.io.fakes.otlp_receiver import discarding_receiver  # noqa: E402

import eval_retrieval  # noqa: E402
import ragio.runner  # noqa: E402
from ragcore.chat.pipeline import (  # noqa: E402
    SEARCH_LIMIT,
    ChatPolicy,
    ChatRequest,
    answer_question,
)
from ragcore.generation import Generate, ModelReply  # noqa: E402
from ragcore.knowledge.effects import SearchChunks  # noqa: E402
from ragcore.knowledge.retrieval import candidate_depth, ef_search  # noqa: E402
from ragcore.settings import load_settings  # noqa: E402
from ragcore.usage import TokenUsage  # noqa: E402
from ragio.db.embedded import EmbeddedPostgres, size_shared_buffers  # noqa: E402
from ragio.db.embedding_space import reshape  # noqa: E402
from ragio.http.app import create_app  # noqa: E402
from ragio.knowledge import search  # noqa: E402
from ragio.knowledge.store import vector_literal  # noqa: E402
from ragio.providers import AnswererChain  # noqa: E402
from ragio.providers.local import LocalEmbedder  # noqa: E402
from ragio.startup import open_service  # noqa: E402

BENCH_VERSION = "2"  # change to rebuild cached databases
CHUNKS_PER_DOCUMENT = 20
BUILD_MEMORY = "4GB"  # maintenance_work_mem of the index build
WARM_UP = 50
MEASUREMENTS = 8  # passes of new questions: search, language, pipeline, /chat, /v1 twice, streams
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class InstantAnswerer:
    """A provider that answers at once, citing the first source; streamed, its words all
    come at once too."""

    name = "instant"
    model = "instant"
    words = ("Here is what", " the documents", " say [1].")

    async def generate(self, request: Generate) -> ModelReply:
        return ModelReply("".join(self.words), provider=self.name, model=self.model)

    async def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]:
        for word in self.words:
            yield word


# ------------------------------------------------------------------ the knowledge base


async def base_vectors(
    corpus: dict[str, str], cache: Path, embedder: LocalEmbedder
) -> tuple[list[str], np.ndarray]:
    """Abstracts and their vectors: eval_retrieval.py's cache when present, else the first
    1,000 abstracts, embedded now (and kept there)."""
    ids, texts = list(corpus), list(corpus.values())
    folder = cache / embedder.space.model
    full = folder / "corpus.npy"
    stamp = full.with_suffix(".sha256")
    if stamp.exists() and stamp.read_text() == eval_retrieval.fingerprint(ids, texts):
        return texts, np.load(full)
    ids, texts = ids[:1000], texts[:1000]
    vectors, _ = await eval_retrieval.embed_cached(
        embedder, ids, texts, folder / "bench-corpus-1000.npy", "document"
    )
    return texts, vectors


def synthetic_chunks(
    texts: list[str], vectors: np.ndarray, count: int, seed: int = 7
) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    sentences = [_SENTENCE.split(text) for text in texts]
    out_texts: list[str] = []
    out_vectors = np.empty((count, vectors.shape[1]), dtype=np.float32)
    for k in range(count):
        a, b = rng.integers(0, len(texts), 2)
        take_a = sentences[a][: int(rng.integers(2, 5))]
        start = int(rng.integers(0, max(1, len(sentences[b]) - 4)))
        take_b = sentences[b][start : start + int(rng.integers(2, 5))]
        out_texts.append(" ".join(take_a + take_b))
        mixed = vectors[a] + vectors[b] + rng.normal(0, 0.02, vectors.shape[1])
        out_vectors[k] = mixed / np.linalg.norm(mixed)
    return out_texts, out_vectors


def ready(url: str, count: int) -> bool:
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT value FROM bench_meta WHERE key = 'version'").fetchone()
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return row == (f"{BENCH_VERSION}/{count}",) and chunks == count
    except psycopg.Error:
        return False


def load(url: str, texts: list[str], vectors: np.ndarray, space: Any) -> None:
    """Fill a migrated, empty database: documents, chunks by COPY, then the HNSW index."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        documents = (len(texts) + CHUNKS_PER_DOCUMENT - 1) // CHUNKS_PER_DOCUMENT
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO documents (name, content_hash, text, content_type, size_bytes)"
                " VALUES (%s, %s, %s, 'text/plain', 0) RETURNING id",
                [(f"bench-{d}.txt", f"bench-{d}", "") for d in range(documents)],
                returning=True,
            )
            ids = []
            while True:
                ids.append(cur.fetchone()[0])
                if not cur.nextset():
                    break
        with (
            conn.transaction(),
            conn.cursor() as cur,
            cur.copy("COPY chunks (document_id, position, text, embedding) FROM STDIN") as copy,
        ):
            for k, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                copy.write_row(
                    (
                        ids[k // CHUNKS_PER_DOCUMENT],
                        k % CHUNKS_PER_DOCUMENT,
                        text,
                        "[" + ",".join(f"{x:.6f}" for x in vector) + "]",
                    )
                )
        print(f"    copied {len(texts)} chunks; building the HNSW index", file=sys.stderr)
        # the graph in memory (about 2 GB at 1,000,000 chunks of 384 dimensions; beyond
        # maintenance_work_mem pgvector goes on building on disk, far slower), the build
        # shared between this process and one worker (2 cores)
        conn.execute(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        started = time.perf_counter()
        with conn.transaction():
            reshape(conn, space)  # the start-up code's index for these dimensions
        built = time.perf_counter() - started
        print(f"    HNSW index built in {built:.0f} s", file=sys.stderr)
        conn.execute("CREATE TABLE bench_meta (key text PRIMARY KEY, value text)")
        conn.execute(
            "INSERT INTO bench_meta VALUES ('version', %s), ('hnsw_build_seconds', %s)",
            (f"{BENCH_VERSION}/{len(texts)}", f"{built:.0f}"),
        )
        conn.execute("VACUUM ANALYZE")


def index_facts(url: str) -> str:
    """The HNSW index's options, size and build time (when the load recorded it)."""
    with psycopg.connect(url) as conn:
        options, size = conn.execute(
            "SELECT coalesce(array_to_string(reloptions, ', '), 'm=16, ef_construction=64'),"
            " pg_size_pretty(pg_relation_size(oid)) FROM pg_class"
            " WHERE relname = 'chunks_embedding_hnsw'"
        ).fetchone()
        built = conn.execute(
            "SELECT value FROM bench_meta WHERE key = 'hnsw_build_seconds'"
        ).fetchone()
    took = f", built in {built[0]} s" if built else ""
    return f"HNSW index {options} (pgvector's defaults unless given), {size}{took}"


# ------------------------------------------------------------------ timing


def percentiles(seconds: list[float]) -> str:
    ms = 1000 * np.asarray(seconds)
    return f"p50 {np.percentile(ms, 50):6.1f} ms   p95 {np.percentile(ms, 95):6.1f} ms"


async def timed(questions: list[str], work: Any) -> list[float]:
    seconds = []
    for question in questions:
        started = time.perf_counter()
        await work(question)
        seconds.append(time.perf_counter() - started)
    return seconds


async def bench(
    url: str,
    questions: list[str],
    per_pass: int,
    data_dir: Path,
    role: str | None = None,
    live_url: str | None = None,
    trace_to: str | None = None,
) -> dict[str, str]:
    """Each pass asks questions no earlier pass asked, after a warm-up of WARM_UP others:
    every timing is that of a new question on a service that has been running. With
    ``trace_to``, traced: every span sent to that OTLP/HTTP address."""
    env = {"DATABASE_URL": url, "DATA_DIR": str(data_dir), "EMBEDDING_PROVIDER": "local"}
    if trace_to is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = trace_to
    if live_url is not None:
        env["ADDON_ENCRYPTION_KEY"] = Fernet.generate_key().decode()
        env["INTEGRATIONS_ALLOW_UNIX_SOCKETS"] = "true"  # the owner's embedded server
    settings = load_settings(env)
    passes = iter(
        questions[start : start + per_pass] for start in range(WARM_UP, len(questions), per_pass)
    )
    results: dict[str, str] = {}
    async with open_service(settings) as service:
        service.answerer = AnswererChain((InstantAnswerer(),))
        space = service.embedder.space
        policy = ChatPolicy.from_settings(settings)

        async def pipeline(question: str) -> None:
            await ragio.runner.run(answer_question(ChatRequest(question), policy), service)

        await timed(questions[:WARM_UP], pipeline)

        async def search_only(question: str) -> None:
            [vector] = await service.embedder.embed([question], "query")
            started = time.perf_counter()
            effect = SearchChunks(tuple(vector), question, policy.search_limit)
            await service.database.run(search.search, effect, space)
            search_seconds.append(time.perf_counter() - started)

        search_seconds: list[float] = []
        embedding = await timed(next(passes), search_only)
        results["question embedding + hybrid search"] = percentiles(embedding)
        results["  hybrid search statement alone"] = percentiles(search_seconds)
        results["  language detection"] = percentiles(
            await timed(next(passes), service.language.detect)
        )
        results["chat pipeline (runner), no HTTP"] = percentiles(
            await timed(next(passes), pipeline)
        )
        async with trio.open_nursery() as nursery:
            base_url, stop = await serve_app(create_app(service), nursery)
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:

                async def http(question: str) -> None:
                    response = await client.post("/chat", json={"question": question})
                    response.raise_for_status()
                    assert response.json()["provider"] in ("instant", None), response.text

                results["POST /chat (all but the provider)"] = percentiles(
                    await timed(next(passes), http)
                )

                async def completion(question: str, follow_up: bool = False) -> None:
                    messages = [{"role": "user", "content": question}]
                    if follow_up:  # after one exchange: read with it, the question joined in
                        messages = [
                            {"role": "user", "content": "What does the study say?"},
                            {"role": "assistant", "content": "An earlier answer [1]."},
                            {"role": "user", "content": f"And {question}"},
                        ]
                    body = {"model": "ragchat", "messages": messages}
                    response = await client.post("/v1/chat/completions", json=body)
                    response.raise_for_status()
                    searched = response.json()["ragchat"]["search_question"]
                    assert bool(searched) == follow_up, response.text

                async def follow_up(question: str) -> None:
                    await completion(question, follow_up=True)

                results["POST /v1/chat/completions, one question"] = percentiles(
                    await timed(next(passes), completion)
                )
                results["POST /v1/chat/completions, a follow-up"] = percentiles(
                    await timed(next(passes), follow_up)
                )
                first_words: list[float] = []

                async def chat_stream(question: str) -> None:
                    body = {"question": question}
                    first_words.append(await first_text(client, "/chat/stream", body, chat_text))

                await timed(next(passes), chat_stream)
                results["POST /chat/stream: first text"] = percentiles(first_words)
                first_words = []

                async def completion_stream(question: str) -> None:
                    messages = [{"role": "user", "content": question}]
                    body = {"model": "ragchat", "messages": messages, "stream": True}
                    path = "/v1/chat/completions"
                    first_words.append(await first_text(client, path, body, completion_text))

                await timed(next(passes), completion_stream)
                results["POST /v1/chat/completions stream: first text"] = percentiles(first_words)
                if role is not None:
                    askers = iter(range(1_000_000))

                    async def as_role(question: str) -> None:
                        params = {"question": question, "role": role, "user": str(next(askers))}
                        response = await client.post("/chat", json=params)
                        response.raise_for_status()

                    results[f"POST /chat as {role}, learning"] = percentiles(
                        await timed(next(passes), as_role)
                    )
                if live_url is not None:
                    results.update(await bench_live(client, live_url, per_pass))
            stop.set()
    return results


def chat_text(event: str, data: str) -> str:
    """The text of one /chat/stream event (an ``error`` event raises)."""
    if event == "error":
        raise RuntimeError(f"/chat/stream: {data}")
    return json.loads(data)["text"] if event == "token" else ""


def completion_text(event: str, data: str) -> str:
    """The text of one streamed /v1/chat/completions chunk (the first says only the role)."""
    if data == "[DONE]":
        return ""
    chunk = json.loads(data)
    if "error" in chunk:
        raise RuntimeError(f"/v1/chat/completions: {data}")
    return "".join(choice["delta"].get("content") or "" for choice in chunk["choices"])


async def first_text(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], text: Any
) -> float:
    """Seconds from sending the request to the first event with text, as the client reads
    the stream (server-sent events; ``text(event, data)`` says an event's text); the rest
    of the stream is read to its end."""
    started = time.perf_counter()
    first, event = None, ""
    async with client.stream("POST", path, json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                said = text(event, line.removeprefix("data:").strip())
                if first is None and said:
                    first = time.perf_counter() - started
            elif not line:
                event = ""
    if first is None:
        raise RuntimeError(f"{path}: the stream ended without any text")
    return first


LIVE_ORDERS = 100_000


def orders_table(url: str) -> None:
    """The owner's shop: LIVE_ORDERS orders, keyed by id."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS orders")
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, email text, status text)")
        conn.execute(
            "INSERT INTO orders SELECT n, 'customer' || n || '@example.com',"
            " (ARRAY['packed', 'shipped', 'delivered'])[1 + n %% 3]"
            " FROM generate_series(1, %s) AS n",
            (LIVE_ORDERS,),
        )


async def bench_live(client: httpx.AsyncClient, live_url: str, per_pass: int) -> dict[str, str]:
    """POST /chat "where is my order N?": no action, the action uncached, cached."""
    await trio.to_thread.run_sync(orders_table, live_url)
    numbers = iter(range(1000, LIVE_ORDERS))

    def fresh(count: int) -> list[str]:
        return [f"where is my order {next(numbers)}?" for _ in range(count)]

    async def ask(question: str) -> None:
        response = await client.post("/chat", json={"question": question})
        response.raise_for_status()

    results = {}
    await timed(fresh(WARM_UP), ask)
    results["live: POST /chat, no action"] = percentiles(await timed(fresh(per_pass), ask))
    # the knowledge base is reused between runs: what an earlier run added goes first
    for action in (await client.get("/live-actions")).raise_for_status().json()["live_actions"]:
        (await client.delete(f"/live-actions/{action['id']}")).raise_for_status()
    for source in (await client.get("/integrations")).raise_for_status().json()["integrations"]:
        if source["name"] == "bench shop":
            (await client.delete(f"/integrations/{source['id']}")).raise_for_status()
    body = {"name": "bench shop", "source_type": "postgresql", "url": live_url, "table": "orders"}
    source = (await client.post("/integrations", json=body)).raise_for_status().json()["id"]
    action = {
        "name": "Order status",
        "source_id": source,
        "template": "SELECT id, status FROM orders WHERE id = {order_id}",
    }
    (await client.post("/live-actions", json=action)).raise_for_status()
    await timed(fresh(WARM_UP), ask)
    asked = fresh(per_pass)
    results["live: POST /chat, action uncached"] = percentiles(await timed(asked, ask))
    results["live: POST /chat, action cached"] = percentiles(await timed(asked, ask))
    outcomes = (await client.get("/live-actions/runs", params={"limit": 500})).json()["runs"]
    ran = [run["duration_ms"] for run in outcomes if run["outcome"] == "ran"]
    results["live: the query at the source (ms)"] = (
        f"p50 {np.percentile(ran, 50):6.1f} ms   p95 {np.percentile(ran, 95):6.1f} ms"
    )
    return results


# ------------------------------------------------------------------ recall


RECALL_QUESTIONS = 200  # held out: half to choose ef_search on, half to report recall on
RECALL_AT = 10
EF_SEARCH_TRIED = (40, 50, 64, 80, 100, 128, 160, 200)
RECALL_WANTED = 0.95


def held_out(questions: list[str]) -> tuple[list[str], list[str]]:
    """RECALL_QUESTIONS claims spread over the dataset, in two alternating halves: one to
    choose on, the other to report on."""
    picked = [questions[k * len(questions) // RECALL_QUESTIONS] for k in range(RECALL_QUESTIONS)]
    return picked[0::2], picked[1::2]


def exact_neighbours(
    url: str, kept: Path, questions: list[str], vectors: list[list[float]], space: Any
) -> list[list[int]]:
    """Each question's RECALL_AT nearest chunks by exact search: the dense list's ordering
    (distance, then id) by a sequential scan, the index disabled; kept in ``kept``."""
    if kept.exists():
        saved = json.loads(kept.read_text())
        if saved["questions"] == questions:
            return saved["ids"]
    distance = search._distance(space.dimensions)
    statement = f"SELECT c.id FROM chunks c ORDER BY {distance}, c.id LIMIT {RECALL_AT}"
    ids = []
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        for vector in vectors:
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                conn.execute("SET LOCAL jit = off")
                rows = conn.execute(statement, {"v": vector_literal(vector)}).fetchall()
            ids.append([row[0] for row in rows])
    took = (time.perf_counter() - started) / len(vectors)
    print(f"   exact search (sequential scan): {1000 * took:.0f} ms a question", flush=True)
    kept.write_text(json.dumps({"questions": questions, "ids": ids}))
    return ids


def hnsw_recall(
    url: str,
    questions: list[str],
    vectors: list[list[float]],
    exact: list[list[int]],
    space: Any,
    ef_search: int | None,
    limit: int,
) -> tuple[list[float], list[float], list[float]]:
    """Per question: recall@RECALL_AT of the service's dense list through the HNSW index
    (its statement, ``mode="dense"``: its depth, ef_search ``ef_search`` or the service's
    rule when None, its iterative scan) against ``exact``; the seconds that dense statement
    takes; and those the service's hybrid statement takes for ``limit`` hits at that
    ef_search."""
    recalls, dense, hybrid = [], [], []
    with psycopg.connect(url, autocommit=True) as conn:
        for question, vector, truth in zip(questions, vectors, exact, strict=True):
            started = time.perf_counter()
            hits = search.rank_chunks(
                conn, vector, question, RECALL_AT, space, mode="dense", hnsw_ef_search=ef_search
            )
            dense.append(time.perf_counter() - started)
            found = {hit.chunk_id for hit in hits}
            recalls.append(len(found & set(truth)) / len(truth))
            started = time.perf_counter()
            search.rank_chunks(conn, vector, question, limit, space, hnsw_ef_search=ef_search)
            hybrid.append(time.perf_counter() - started)
    return recalls, dense, hybrid


async def recall(
    url: str,
    kept: Path,
    count: int,
    questions: list[str],
    embedder: LocalEmbedder,
    tried: list[int],
) -> None:
    """Recall@10 of the dense list through HNSW against exact search, at the service's
    ef_search and at each of ``tried``; the smallest reaching RECALL_WANTED on the
    choosing half, its recall reported on the other half."""
    choose, report = held_out(questions)
    space = embedder.space
    vectors = await embedder.embed(choose + report, "query")
    exact = await trio.to_thread.run_sync(
        exact_neighbours, url, kept, choose + report, vectors, space
    )
    limit = SEARCH_LIMIT
    half = len(choose)
    # one pass to warm the cache, so that every setting is timed alike (these questions'
    # pages read before: the timings compare the settings, the passes above are absolute)
    await trio.to_thread.run_sync(
        hnsw_recall, url, choose + report, vectors, exact, space, max(tried), limit
    )
    print(
        f"   recall@{RECALL_AT}, the dense list through HNSW against exact search "
        f"({half} questions to choose on, {len(report)} to report on); the dense "
        f"statement alone and the hybrid one ({limit} hits) over all {len(vectors)}, warm:",
        flush=True,
    )
    rule = ef_search(candidate_depth(limit), count)  # the service's with the planner's count
    chosen = None
    for ef in [None, *tried]:
        recalls, dense, hybrid = await trio.to_thread.run_sync(
            hnsw_recall, url, choose + report, vectors, exact, space, ef, limit
        )
        on_choose, on_report = np.mean(recalls[:half]), np.mean(recalls[half:])
        name = f"service's rule ({rule})" if ef is None else f"ef_search {ef}"
        print(
            f"   {name:22s} choose {on_choose:.3f}   report {on_report:.3f}   "
            f"dense alone {percentiles(dense)}   hybrid {percentiles(hybrid)}",
            flush=True,
        )
        if ef is not None and chosen is None and on_choose >= RECALL_WANTED:
            chosen = (ef, on_report)
    if chosen is None:
        print(f"   no ef_search tried reaches recall@{RECALL_AT} {RECALL_WANTED} (choosing half)")
    else:
        print(
            f"   smallest reaching {RECALL_WANTED} on the choosing half: ef_search {chosen[0]}, "
            f"recall@{RECALL_AT} {chosen[1]:.3f} on the reporting half",
            flush=True,
        )


def prewarm(url: str) -> None:
    """Load the chunks, their TOAST and indexes into shared_buffers, as a service that
    has been answering for a while would have them (as the superuser: pg_prewarm is no
    extension a database owner may create)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        conn.execute(
            """SELECT pg_prewarm(c.oid) FROM pg_class c
               WHERE c.relname IN ('chunks', 'chunks_embedding_hnsw', 'chunks_search_vector_gin',
                                   'chunks_pkey', 'documents', 'fulltext_terms')
                  OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE relname = 'chunks')"""
        )


def claims(folder: Path) -> list[str]:
    """Every question of the dataset (SciFact: 1,109 claims), in file order."""
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


async def run(args: argparse.Namespace) -> None:
    cache = Path(args.cache)
    corpus, _, _ = eval_retrieval.load_beir(Path(args.dataset), "test")
    questions = claims(Path(args.dataset))
    # the measurements that take a pass of new questions each (see bench)
    measurements = MEASUREMENTS + (1 if args.role else 0)
    per_pass = min(args.questions, (len(questions) - WARM_UP) // measurements)
    if per_pass < 50:
        raise SystemExit(f"{args.dataset} has too few questions for {measurements} measurements")
    if per_pass < args.questions:
        print(f"{len(questions):,} questions: {per_pass} a measurement, after {WARM_UP} to warm up")
    embedder = LocalEmbedder(cache_dir=cache / "data" / "models")  # the service's DATA_DIR
    await embedder.ready()
    texts, vectors = await base_vectors(corpus, Path(args.vectors), embedder)
    server = EmbeddedPostgres(cache / "pg")
    await trio.to_thread.run_sync(server.start)
    # The embedded server as the service runs it from its second start on (its own
    # start-up sizes shared_buffers), unless --pg asks otherwise; applied by a restart.
    with psycopg.connect(server.admin_url(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM RESET ALL")
        size_shared_buffers(conn)
        for setting in args.pg:
            name, _, value = setting.partition("=")
            if not re.fullmatch(r"[a-z_]+", name):
                raise SystemExit(f"--pg {setting!r}: expected NAME=VALUE")
            conn.execute(
                sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value))
            )
    await trio.to_thread.run_sync(server.stop)
    await trio.to_thread.run_sync(server.start)
    with psycopg.connect(server.url()) as conn:
        shown = [
            f"{name} = {conn.execute(f'SHOW {name}').fetchone()[0]}"
            for name in ("shared_buffers", "io_method")
        ]
        print("PostgreSQL: " + ", ".join(shown))
    owner: EmbeddedPostgres | None = None
    try:
        for count in args.chunks:
            name = f"bench_{count}"
            url = server.url(name)
            print(f"== {count:,} chunks", flush=True)
            if not await trio.to_thread.run_sync(ready, url, count):
                started = time.perf_counter()
                await eval_retrieval.fresh_database(server, name)
                settings = load_settings({"DATABASE_URL": url, "EMBEDDING_PROVIDER": "local"})
                async with open_service(settings):
                    pass  # migrations and the embedding column, as at start-up
                chunk_texts, chunk_vectors = synthetic_chunks(texts, vectors, count)
                await trio.to_thread.run_sync(load, url, chunk_texts, chunk_vectors, embedder.space)
                print(f"   built in {time.perf_counter() - started:.0f} s", flush=True)
            print("   " + await trio.to_thread.run_sync(index_facts, url), flush=True)
            if args.prewarm:
                await trio.to_thread.run_sync(prewarm, server.admin_url(name))
            live_url = None
            if args.live:  # on a server of the owner's: never the service's own database
                if owner is None:
                    owner = EmbeddedPostgres(cache / "owner-pg")
                    await trio.to_thread.run_sync(owner.start)
                live_url = await eval_retrieval.fresh_database(owner, "bench_live_shop")
            sink = discarding_receiver() if args.trace else None
            try:
                results = await bench(
                    url, questions, per_pass, cache / "data", args.role, live_url,
                    f"http://127.0.0.1:{sink.server_port}" if sink else None,
                )  # fmt: skip
            finally:
                if sink is not None:
                    print(f"   spans received in {sink.batches} batches", flush=True)
                    sink.shutdown()
                    sink.server_close()
            for what, timing in results.items():
                print(f"   {what:44s} {timing}", flush=True)
            if args.recall:
                kept = cache / f"exact-{BENCH_VERSION}-{count}.json"
                await recall(url, kept, count, questions, embedder, args.ef_search)
    finally:
        if owner is not None:
            await trio.to_thread.run_sync(owner.stop)
        await trio.to_thread.run_sync(server.stop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        default=str(ROOT / "data" / "bench-cache"),
        help="folder for the databases and vectors (default %(default)s)",
    )
    parser.add_argument(
        "--dataset",
        default=str(ROOT.parent / "shared" / "datasets" / "scifact"),
        help="BEIR folder whose abstracts and claims are used (default %(default)s)",
    )
    parser.add_argument(
        "--vectors",
        default=str(ROOT / "data" / "eval-cache"),
        help="eval_retrieval.py's --cache, whose corpus vectors are reused when present "
        "(default %(default)s)",
    )
    parser.add_argument("--chunks", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument(
        "--pg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a PostgreSQL setting for the embedded server, e.g. shared_buffers=1GB (repeatable)",
    )
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="load the tables and indexes into shared_buffers first (pg_prewarm)",
    )
    parser.add_argument(
        "--questions", type=int, default=175, help="questions timed per measurement and size"
    )
    parser.add_argument(
        "--role", help="also time POST /chat as this role, with learning (e.g. support)"
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="also time a live-data action's added latency, uncached and cached",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="traced (OTEL_EXPORTER_OTLP_ENDPOINT): every span sent to a local receiver",
    )
    parser.add_argument(
        "--recall",
        action="store_true",
        help=f"also recall@{RECALL_AT} of the dense list through HNSW against exact search, "
        "at the service's ef_search and at each of --ef-search",
    )
    parser.add_argument(
        "--ef-search",
        nargs="+",
        type=int,
        default=list(EF_SEARCH_TRIED),
        help="hnsw.ef_search values --recall tries (default %(default)s)",
    )
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
