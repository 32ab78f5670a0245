#!/usr/bin/env python3
"""Time to the first streamed word through the chat widget's HTTP path, beside /chat/stream.

    .venv/bin/python scripts/bench_widget.py
    .venv/bin/python scripts/bench_widget.py --runs 200 --word-delay 0.05

The real service (Hypercorn with the production config, on 127.0.0.1; an embedded
PostgreSQL in a temporary folder) answers with a fake OpenAI server
(tests/io/fakes/openai_server.py) that answers at once and writes one word every
``--word-delay`` seconds: what is timed is the service's own path to the first ``token``
event. Each run, in turn:

- widget, new page: POST /widget/sessions, then POST /widget/chat/stream (the widget's
  first question on a page: the session is on the path);
- widget, token held: POST /widget/chat/stream with a token already issued (a new
  visitor's, so that no run continues an earlier conversation);
- POST /chat/stream, the owner's route, with the API key.

The questions are new to each run. Printed: median and p90 in ms, and their ratio to
/chat/stream's in the same run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.conftest import make_settings  # noqa: E402
from tests.io.conftest import serve_app, serve_service  # noqa: E402
from tests.io.fakes.openai_server import FakeOpenAI  # noqa: E402

from ragio.db.embedded import EmbeddedPostgres  # noqa: E402
from ragio.startup import open_service  # noqa: E402

KEY = "bench-key-0123456789"
OWNER = {"X-API-Key": KEY}
SHOP = "https://shop.example.com"
REPLY = "You can return an item within 30 days of delivery and get a full refund [1]."
DOCUMENTS = {
    "returns.md": "# Returns\n\nItems can be returned within 30 days of delivery.",
    "shipping.md": "# Shipping\n\nOrders ship within two working days, tracked.",
    "hours.md": "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm.",
}
TOPICS = ("return an item", "shipping times", "opening hours", "a refund", "tracking")
WARM_UP = 10


async def first_token(client: httpx.AsyncClient, started: float, url: str, **request: Any) -> float:
    """Send the request; the seconds from ``started`` to its first token event (the rest
    of the answer is read, untimed)."""
    async with client.stream("POST", url, **request) as response:
        if response.status_code != 200:
            await response.aread()
            raise SystemExit(f"{url}: {response.status_code} {response.text}")
        lines = response.aiter_lines()
        async for line in lines:
            if line == "event: token":
                seconds = time.perf_counter() - started
                break
        else:
            raise SystemExit(f"{url}: no token event")
        async for _ in lines:  # the rest of the answer, untimed
            pass
    return seconds


async def bench(runs: int, word_delay: float) -> dict[str, list[float]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-widget-"))
    server = EmbeddedPostgres(folder / "pg")
    await trio.to_thread.run_sync(server.start)
    timings: dict[str, list[float]] = {"widget, new page": [], "widget, token held": [],
                                       "/chat/stream": []}  # fmt: skip
    try:
        url = await trio.to_thread.run_sync(server.create_database, "bench_widget")
        async with trio.open_nursery() as nursery:
            fake = FakeOpenAI(api_key="sk-bench", reply=REPLY)
            fake.word_delay = word_delay
            fake_url, stop_fake = await serve_app(fake, nursery)
            settings = make_settings(
                database_url=url,
                data_dir=folder / "data",
                service_api_key=KEY,
                openai_api_key=fake.api_key,
                openai_base_url=fake_url + fake.base_path,
                embedding_dimensions=64,
            )
            async with open_service(settings) as service:
                base_url, stop = await serve_service(service, nursery)
                async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
                    for name, text in DOCUMENTS.items():
                        body = {"name": name, "text": text}
                        (
                            await client.post("/documents", json=body, headers=OWNER)
                        ).raise_for_status()
                    quota = 1_000_000
                    site = {
                        "name": "bench", "allowed_origins": [SHOP], "tokens_per_day": 0,
                        "visitor_questions_per_day": quota, "ip_questions_per_hour": quota,
                        "ip_questions_per_day": quota,
                    }  # fmt: skip
                    made = await client.post("/widget/sites", json=site, headers=OWNER)
                    public_id = made.raise_for_status().json()["public_id"]

                    async def session() -> str:
                        started = await client.post(
                            "/widget/sessions", json={"site": public_id}, headers={"Origin": SHOP}
                        )
                        return started.raise_for_status().json()["token"]

                    async def widget(question: str, token: str | None = None) -> float:
                        started = time.perf_counter()
                        token = token or await session()
                        headers = {"Authorization": f"Bearer {token}", "Origin": SHOP}
                        return await first_token(
                            client, started, "/widget/chat/stream", json={"question": question},
                            headers=headers,
                        )  # fmt: skip

                    async def chat(question: str) -> float:
                        return await first_token(
                            client, time.perf_counter(), "/chat/stream",
                            json={"question": question}, headers=OWNER,
                        )  # fmt: skip

                    for k in range(WARM_UP + runs):
                        asked = f"Question {k}: what about {TOPICS[k % len(TOPICS)]}?"
                        held = await session()
                        ways = [
                            ("widget, new page", lambda q=asked: widget(q)),
                            ("widget, token held", lambda q=asked, t=held: widget(q, t)),
                            ("/chat/stream", lambda q=asked: chat(q)),
                        ]
                        for name, work in ways[k % 3 :] + ways[: k % 3]:  # in turn first
                            seconds = await work()
                            if k >= WARM_UP:
                                timings[name].append(seconds)
                stop.set()
            stop_fake.set()
            fake.close()
    finally:
        await trio.to_thread.run_sync(server.stop)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="timed runs (default %(default)s)")
    parser.add_argument(
        "--word-delay",
        type=float,
        default=0.02,
        help="seconds between the fake model's words (default %(default)s)",
    )
    args = parser.parse_args()
    timings = trio.run(bench, args.runs, args.word_delay)
    chat = np.asarray(timings["/chat/stream"]) * 1000
    print(f"time to the first streamed word, {args.runs} runs (after {WARM_UP} untimed)")
    for name, seconds in timings.items():
        ms = np.asarray(seconds) * 1000
        median, p90 = np.percentile(ms, 50), np.percentile(ms, 90)
        ratio = median / np.percentile(chat, 50), p90 / np.percentile(chat, 90)
        print(
            f"  {name:20s} median {median:6.1f} ms   p90 {p90:6.1f} ms"
            f"   x{ratio[0]:.2f} / x{ratio[1]:.2f} of /chat/stream"
        )


if __name__ == "__main__":
    main()
