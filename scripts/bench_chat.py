#!/usr/bin/env python3
"""Time the service spends on a chat question around the provider, at 10,000 and 100,000 chunks.

    .venv/bin/python scripts/bench_chat.py
    .venv/bin/python scripts/bench_chat.py --pg shared_buffers=1GB --prewarm
    .venv/bin/python scripts/bench_chat.py --chunks 10000 --questions 150 --role support
    .venv/bin/python scripts/bench_chat.py --chunks 10000 --trace

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
(``ragcore.employees.learning``). With ``--live``, also "where is my order N?" with a
live-data action on a PostgreSQL table of 100,000 orders (on a second embedded server,
the owner's: a data source never reads the service's own): without the action, with it
uncached (a new order each time: the query runs on a new connection), and cached (asked
again within 5 minutes); the differences are the latency a live action adds. With
``--trace``, traced (OTEL_EXPORTER_OTLP_ENDPOINT): every span sent over OTLP/HTTP to a
receiver in a thread that keeps none; beside a run without it, what tracing costs.

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
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question  # noqa: E402
from ragcore.generation import Generate, ModelReply  # noqa: E402
from ragcore.knowledge.effects import SearchChunks  # noqa: E402
from ragcore.settings import load_settings  # noqa: E402
from ragio.db.embedded import EmbeddedPostgres, size_shared_buffers  # noqa: E402
from ragio.db.embedding_space import reshape  # noqa: E402
from ragio.http.app import create_app  # noqa: E402
from ragio.knowledge import search  # noqa: E402
from ragio.providers import AnswererChain  # noqa: E402
from ragio.providers.local import LocalEmbedder  # noqa: E402
from ragio.startup import open_service  # noqa: E402

BENCH_VERSION = "2"  # change to rebuild cached databases
CHUNKS_PER_DOCUMENT = 20
WARM_UP = 50
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class InstantAnswerer:
    """A provider that answers at once, citing the first source."""

    name = "instant"
    model = "instant"

    async def generate(self, request: Generate) -> ModelReply:
        return ModelReply(
            "Here is what the documents say [1].", provider=self.name, model=self.model
        )


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
        conn.execute("SET maintenance_work_mem = '1GB'")
        with conn.transaction():
            reshape(conn, space)  # the start-up code's index for these dimensions
        conn.execute("CREATE TABLE bench_meta (key text PRIMARY KEY, value text)")
        conn.execute(
            "INSERT INTO bench_meta VALUES ('version', %s)", (f"{BENCH_VERSION}/{len(texts)}",)
        )
        conn.execute("VACUUM ANALYZE")


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
    if len(questions) < WARM_UP + (7 if args.role else 6) * args.questions:
        raise SystemExit(f"{args.dataset} has too few questions for --questions {args.questions}")
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
                    url, questions, args.questions, cache / "data", args.role, live_url,
                    f"http://127.0.0.1:{sink.server_port}" if sink else None,
                )  # fmt: skip
            finally:
                if sink is not None:
                    print(f"   spans received in {sink.batches} batches", flush=True)
                    sink.shutdown()
                    sink.server_close()
            for what, timing in results.items():
                print(f"   {what:36s} {timing}", flush=True)
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
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
