#!/usr/bin/env python3
"""What an API key made with /keys adds to a request, beside SERVICE_API_KEY's.

    .venv/bin/python scripts/bench_keys.py
    .venv/bin/python scripts/bench_keys.py --runs 2000

The real service (Hypercorn with the production config on 127.0.0.1, an embedded
PostgreSQL in a temporary folder, offline) answers GET /v1/models, the cheapest route
behind the key, with, in turn: SERVICE_API_KEY (compared in the process), a chat key
(its row read from PostgreSQL: revocation holds at once), and a chat key with a
requests-a-minute limit (its minute's count raised in PostgreSQL too). Printed: median
and p90 in ms of each, and the difference to SERVICE_API_KEY's median.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.conftest import make_settings  # noqa: E402
from tests.io.conftest import serve_service  # noqa: E402

from ragio.db.embedded import EmbeddedPostgres  # noqa: E402
from ragio.startup import open_service  # noqa: E402

OWNER_KEY = "bench-owner-key-0123456789"
WARM_UP = 50


async def bench(runs: int) -> dict[str, list[float]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-keys-"))
    server = EmbeddedPostgres(folder / "pg")
    await trio.to_thread.run_sync(server.start)
    timings: dict[str, list[float]] = {}
    try:
        url = await trio.to_thread.run_sync(server.create_database, "bench_keys")
        settings = make_settings(
            database_url=url, data_dir=folder / "data", service_api_key=OWNER_KEY
        )
        async with open_service(settings) as service, trio.open_nursery() as nursery:
            base_url, stop = await serve_service(service, nursery)
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
                owner = {"X-API-Key": OWNER_KEY}

                async def made(**fields: object) -> dict[str, str]:
                    answer = await client.post("/keys", json=fields, headers=owner)
                    return {"X-API-Key": answer.raise_for_status().json()["key"]}

                ways = {
                    "SERVICE_API_KEY": owner,
                    "chat key": await made(name="chat", scopes=["chat"]),
                    "chat key, 10^6 a minute": await made(
                        name="limited", scopes=["chat"], requests_per_minute=1_000_000
                    ),
                }
                timings = {name: [] for name in ways}
                for k in range(WARM_UP + runs):
                    order = list(ways.items())
                    for name, headers in order[k % 3 :] + order[: k % 3]:  # in turn first
                        started = time.perf_counter()
                        answer = await client.get("/v1/models", headers=headers)
                        seconds = time.perf_counter() - started
                        answer.raise_for_status()
                        if k >= WARM_UP:
                            timings[name].append(seconds)
            stop.set()
    finally:
        await trio.to_thread.run_sync(server.stop)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="timed runs (default %(default)s)")
    args = parser.parse_args()
    timings = trio.run(bench, args.runs)
    base = float(np.median(timings["SERVICE_API_KEY"])) * 1000
    print(f"GET /v1/models, {args.runs} runs each, in turn")
    for name, seconds in timings.items():
        median, p90 = (float(np.percentile(seconds, q)) * 1000 for q in (50, 90))
        print(f"{name:26} median {median:6.2f} ms  p90 {p90:6.2f} ms  (+{median - base:.2f} ms)")


if __name__ == "__main__":
    main()
