#!/usr/bin/env python3
"""Ingestion throughput, in chunks per second, through the real `ragchat ingest` code.

    .venv/bin/python scripts/bench_ingest.py ../shared/datasets/scifact --documents 2000

Writes the first N abstracts of a BEIR corpus as .txt files, then adds them
with ``ragio.knowledge.ingest.ingest_paths`` (reading, chunking, embedding,
storing) on an embedded PostgreSQL, twice:

- ``local``: the offline embedder;
- ``remote-100ms``: the openai embedder against a fake OpenAI server that takes
  100 ms per request, as a real provider might: batching and concurrency show here.
  The fake runs in a process of its own, so its work is not counted as ours.

Each run starts from an empty database. Prints files, chunks, seconds and chunks/s;
the embedder is loaded first, its time printed apart (the local MiniLM's first load
in a new DATA_DIR builds its faster graph, about 5 s: ``ragio.providers.minilm_graph``).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.conftest import make_settings  # noqa: E402
from tests.io.fakes.openai_server import FakeOpenAI  # noqa: E402

from ragio.db.embedded import EmbeddedPostgres  # noqa: E402
from ragio.knowledge.ingest import ingest_paths  # noqa: E402
from ragio.startup import open_service  # noqa: E402


def write_corpus(dataset: Path, folder: Path, count: int) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(dataset / "corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            if written == count:
                break
            doc = json.loads(line)
            (folder / f"{doc['_id']}.txt").write_text(f"{doc['title']}\n\n{doc['text']}\n")
            written += 1
    return written


def fresh_database(server: EmbeddedPostgres, name: str) -> str:
    server.drop_database(name)
    return server.create_database(name)


async def measure(label: str, settings: object, folder: Path) -> None:
    async with open_service(settings) as svc:
        started = time.perf_counter()
        await svc.embedder.embed(["warm-up"], purpose="passage")  # loads a local model
        if ready := getattr(svc.embedder, "ready", None):
            await ready()  # the local MiniLM's faster graph, built on a first start
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        report = await ingest_paths(svc, [folder])
        seconds = time.perf_counter() - started
    if report.stopped or report.failed:
        raise SystemExit(f"{label}: {report.stopped or report.failed[:3]}")
    print(
        f"{label:>14}: {len(report.added)} files, {report.chunks} chunks in {seconds:.1f} s "
        f"= {report.chunks / seconds:,.0f} chunks/s (the model loaded in {loaded:.1f} s before)",
        flush=True,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_for_port(port: int) -> None:
    with trio.fail_after(30):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.05)
            else:
                await stream.aclose()
                return


async def serve_fake(port: int, delay: float) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    fake = FakeOpenAI(api_key="sk-bench")
    fake.delay = delay
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    await serve(fake, config)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path, nargs="?", help="a BEIR folder with corpus.jsonl")
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.1, help="fake provider latency, s")
    parser.add_argument("--serve-fake", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        await serve_fake(args.serve_fake, args.delay)
        return

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        tmp_path = Path(tmp)
        count = write_corpus(args.dataset, tmp_path / "docs", args.documents)
        print(f"{count} documents from {args.dataset}", flush=True)
        server = EmbeddedPostgres(tmp_path / "data")
        await trio.to_thread.run_sync(server.start)
        try:
            local = make_settings(database_url=fresh_database(server, "bench_local"))
            await measure("local", local, tmp_path / "docs")

            port = free_port()
            fake = subprocess.Popen(
                [sys.executable, __file__, "--serve-fake", str(port), "--delay", str(args.delay)]
            )
            try:
                await wait_for_port(port)
                remote = make_settings(
                    database_url=fresh_database(server, "bench_remote"),
                    openai_api_key="sk-bench",
                    openai_base_url=f"http://127.0.0.1:{port}/v1",
                    embedding_dimensions=256,
                    llm_provider="extractive",
                )
                await measure(f"remote-{args.delay * 1000:.0f}ms", remote, tmp_path / "docs")
            finally:
                fake.terminate()
                fake.wait(10)
        finally:
            server.stop()


if __name__ == "__main__":
    trio.run(main)
