#!/usr/bin/env python3
"""CPU a call of the OpenAI provider (``generate``, ``stream``, ``embed``), this code against
another checkout's, on a fake OpenAI server on 127.0.0.1.

    .venv/bin/python scripts/bench_providers.py --src /tmp/wt-before/src
    .venv/bin/python scripts/bench_providers.py --src ../other/src --calls 1000 --rounds 5

What runs, each a process of its own:

- the fake OpenAI server of ``tests/io/fakes/openai_server.py`` on the lean HTTP/1.1
  server of scripts/bench_load.py (``bench_load.py fakes``): chat completions and base64
  embeddings of ``--dimensions`` (3,072 by default), answered at once;
- for each source tree (``--src``, then this checkout's ``src``), in turns, ``--rounds``
  times: a measuring process importing ragio from that tree alone (PYTHONPATH), which
  makes ``--calls`` sequential calls of each kind, one at a time as /chat makes them
  (``generate`` and ``stream`` with a prompt of ~3 KB, as /chat's; ``embed`` of one
  question), after a warm-up, and reports the CPU it spent a call (its
  ``time.process_time``, user and system, all threads) and the wall time a call.

The CPU a call is the steadier figure on a shared machine: the wall time moves with
whatever else runs; runs of the two trees alternate so that both see the same machine.
The median of the rounds is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("generate", "stream", "embed")
WARM_UP_CALLS = 50
API_KEY = "sk-bench-key"  # scripts/bench_load.py's fake takes this key


def measure_main(spec: dict[str, Any]) -> None:
    """The measuring process: the calls on the fake at ``spec["url"]``, their CPU and wall
    time a call as JSON on stdout. Imports ragio from PYTHONPATH only."""
    import trio

    from ragcore.generation import Generate, Prompt
    from ragcore.settings import load_settings
    from ragio.providers.openai import OpenAIAnswerer, OpenAIEmbedder

    settings = load_settings(
        {
            "OPENAI_API_KEY": API_KEY,
            "OPENAI_BASE_URL": spec["url"],
            "EMBEDDING_DIMENSIONS": str(spec["dimensions"]),
        }
    )
    sources = "\n\n".join(
        f"[{n}] (policies.md)\nItems can be returned within 30 days of delivery for a full "
        f"refund; refunds are paid to the original payment method within 5 business days. " * 3
        for n in range(1, 7)
    )
    request = Generate(
        Prompt(
            system="Answer only from the numbered sources, citing them as [n].",
            user=f"Sources:\n\n{sources}\n\nQuestion: How long do refunds take?",
            question="How long do refunds take?",
            sources=(),
        ),
        max_output_tokens=512,
        temperature=0.2,
    )

    async def main() -> dict[str, tuple[float, float]]:
        answerer = OpenAIAnswerer(settings)
        embedder = OpenAIEmbedder(settings)

        async def generate() -> None:
            await answerer.generate(request)

        async def stream() -> None:
            async for _ in answerer.stream(request):
                pass

        async def embed() -> None:
            await embedder.embed(["How long do refunds take?"], "query")

        calls = {"generate": generate, "stream": stream, "embed": embed}
        results = {}
        for kind in KINDS:
            call = calls[kind]
            for _ in range(WARM_UP_CALLS):
                await call()
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(spec["calls"]):
                await call()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            results[kind] = (cpu / spec["calls"] * 1000, wall / spec["calls"] * 1000)
        await answerer.aclose()
        await embedder.aclose()
        return results

    print(json.dumps(trio.run(main)))


def measured(src: Path, url: str, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    spec = {"url": url, "calls": args.calls, "dimensions": args.dimensions}
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "measure", json.dumps(spec)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd="/",  # nothing imported from the working folder: only from ``src``
    )
    return {kind: tuple(value) for kind, value in json.loads(out.stdout).items()}  # type: ignore[misc]


def run(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_load import child, free_port

    trees = {"before": Path(args.src).resolve(), "this": ROOT / "src"}
    port = free_port()
    fakes = [sys.executable, str(ROOT / "scripts" / "bench_load.py"), "fakes", port]
    log = Path(args.log)
    results: dict[str, list[dict[str, tuple[float, float]]]] = {name: [] for name in trees}
    with child([str(part) for part in [*fakes, args.dimensions]], port, log):
        url = f"http://127.0.0.1:{port}/v1"
        for round_ in range(args.rounds):
            for name, src in trees.items():
                results[name].append(measured(src, url, args))
                print(f"round {round_ + 1} {name}: {results[name][-1]}", flush=True)
    print(
        f"\n{args.calls} calls of each kind a round, median of {args.rounds} rounds; "
        f"embeddings of {args.dimensions} dimensions (base64)"
    )
    print(f"{'call':<10} {'tree':<8} {'CPU ms/call':>12} {'wall ms/call':>13}")
    for kind in KINDS:
        for name, src in trees.items():
            cpu = statistics.median(r[kind][0] for r in results[name])
            wall = statistics.median(r[kind][1] for r in results[name])
            print(f"{kind:<10} {name:<8} {cpu:>12.3f} {wall:>13.3f}   ({src})")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "measure":
        measure_main(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True, help="the other checkout's src folder")
    parser.add_argument("--calls", type=int, default=500, help="calls of each kind a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each tree, in turns")
    parser.add_argument("--dimensions", type=int, default=3072, help="embedding dimensions")
    parser.add_argument(
        "--log",
        default=str(Path(tempfile.gettempdir()) / "bench_providers_fake.log"),
        help="where the fake server's output goes",
    )
    run(parser.parse_args())


if __name__ == "__main__":
    main()
