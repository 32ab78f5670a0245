#!/usr/bin/env python3
"""A website crawl's cost, first and again, through the real crawl code.

    .venv/bin/python scripts/bench_crawl.py [--manual /usr/share/doc/apache2-doc/manual]

Serves a copy of the Apache HTTP Server manual (Debian's apache2-doc) with Python's own
file server, in a process of its own (Last-Modified, If-Modified-Since: a plain static
server), and crawls its English pages (``include: /manual/en/*``) with
``ragio.websites.crawl.crawl`` on an embedded PostgreSQL and the local embedder, three
times:

- ``first``: every page fetched, read, chunked, embedded and stored;
- ``unchanged``: nothing changed: every page answers 304, nothing is read or embedded;
- ``edited``: ``--edit`` pages changed: only those are read and embedded again.

Prints each crawl's pages by outcome, the texts embedded and its seconds, and the
re-crawls' seconds as a share of the first's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from scripts.bench_ingest import free_port, wait_for_port  # noqa: E402
from tests.conftest import make_settings  # noqa: E402

from ragcore.websites.sites import check_new  # noqa: E402
from ragio.db.embedded import EmbeddedPostgres  # noqa: E402
from ragio.startup import open_service  # noqa: E402
from ragio.websites import store  # noqa: E402
from ragio.websites.crawl import crawl  # noqa: E402


class Counting:
    """The service's embedder, counting the texts it embeds for documents."""

    def __init__(self, real: Any) -> None:
        self.real, self.name, self.space = real, real.name, real.space
        self.texts = 0

    async def embed(self, texts: list[str], purpose: str) -> Any:
        if purpose == "document":
            self.texts += len(texts)
        return await self.real.embed(texts, purpose)


async def run(site: Path, port: int, edit: int) -> None:
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-crawl-db-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "data")
        await trio.to_thread.run_sync(server.start)
        try:
            settings = make_settings(
                database_url=server.create_database("bench_crawl"),
                websites_allow_private_targets="true",
            )
            async with open_service(settings) as svc:
                await svc.embedder.embed(["warm-up"], purpose="passage")
                if ready := getattr(svc.embedder, "ready", None):
                    await ready()
                svc.embedder = counting = Counting(svc.embedder)
                fields = check_new(
                    {
                        "name": "manual",
                        "start_urls": [f"{base}/manual/en/index.html"],
                        "include": ["/manual/en/*"],
                        "max_pages": 2000,
                        "max_depth": 10,
                    }
                )
                website = await svc.database.run(store.create, fields, svc.clock.now())
                first = await measure("first", svc, website, counting)
                unchanged = await measure("unchanged", svc, website, counting)
                pages = sorted((site / "manual" / "en" / "mod").glob("*.html"))[:edit]
                time.sleep(1.1)  # Last-Modified has whole seconds
                for page in pages:
                    page.write_text(page.read_text().replace("<body", "<body><p>Edited.</p", 1))
                edited = await measure("edited", svc, website, counting)
        finally:
            await trio.to_thread.run_sync(server.stop)
    print(
        f"re-crawl, nothing changed: {unchanged / first:.1%} of the first crawl's time; "
        f"{edit} pages edited: {edited / first:.1%}"
    )


async def measure(label: str, svc: Any, website: Any, counting: Counting) -> float:
    counting.texts = 0
    started = time.perf_counter()
    result = await crawl(svc, website)
    seconds = time.perf_counter() - started
    pages = ", ".join(f"{n} {outcome}" for outcome, n in result["pages"].items())
    print(f"{label:>9}: {pages}; {counting.texts} texts embedded; {seconds:.2f} s", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manual", type=Path, default=Path("/usr/share/doc/apache2-doc/manual"))
    parser.add_argument("--edit", type=int, default=5, help="pages edited before the last crawl")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-crawl-site-") as tmp:
        site = Path(tmp)
        shutil.copytree(args.manual, site / "manual", symlinks=False)
        port = free_port()
        served = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=site,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            trio.run(wait_for_port, port)
            trio.run(run, site, port, args.edit)
        finally:
            served.terminate()
            served.wait()


if __name__ == "__main__":
    main()
