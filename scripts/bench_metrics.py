#!/usr/bin/env python3
"""What counting costs: the CPU time the metrics add to a request and to a provider call.

    .venv/bin/python scripts/bench_metrics.py
    .venv/bin/python scripts/bench_metrics.py --runs 50000

Each measure runs twice, in a fresh interpreter each (prometheus_client reads
``PROMETHEUS_MULTIPROC_DIR`` at import): as one process (the variable unset, the
metrics in the process's memory) and as one of the processes of a ``ragchat serve``
behind one port (the variable set to a new folder: each value written to a memory-mapped
file there, each provider's last call to a JSON file). Printed, in microseconds of CPU
(``time.process_time``), the median of 5 rounds:

- ``request``: ``RequestMetrics`` (``ragio.http.metrics``) around an app that answers at
  once, less that app alone: a request's count, its latency and the in-flight gauge up
  and down, the route's template matched;
- ``provider call``: a provider call's counters and histogram, and its last call recorded
  (``ragio.providers.chain``'s ``_called`` and ``_ended``, without a span);
- ``last call``: ``LAST_CALLS.record`` alone, each call as the one before (with the
  variable: its file rewritten once a second at most);
- ``last call, changed``: the same, each call's outcome another than the one before's
  (with the variable: its file rewritten at each call, the worst case).
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

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5


def measure(runs: int) -> dict[str, float]:
    """Microseconds of CPU per operation, each the median of ROUNDS rounds."""
    import trio
    from werkzeug.routing import Map, Rule

    from ragcore.chat.fallback import Attempt, FailureKind
    from ragio import metrics
    from ragio.http.metrics import RequestMetrics
    from ragio.providers.last_calls import LAST_CALLS

    routes = Map([Rule("/documents/<id>", endpoint="document"), Rule("/health", endpoint="h")])

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive() -> dict:
        return {"type": "http.request"}

    async def send(message: dict) -> None:
        return None

    counted = RequestMetrics(app, routes)
    scope = {"type": "http", "method": "GET", "path": "/documents/1234"}

    async def requests(handler, n: int) -> float:
        started = time.process_time()
        for _ in range(n):
            await handler(scope, receive, send)
        return time.process_time() - started

    def per_request() -> float:
        bare = trio.run(requests, app, runs)
        wrapped = trio.run(requests, counted, runs)
        return (wrapped - bare) / runs

    failed = Attempt("openai", FailureKind.UNAVAILABLE, 503)

    def per_call() -> float:
        started = time.process_time()
        for n in range(runs):
            metrics.PROVIDER_CALLS.labels("openai", "answer").inc()
            began = time.perf_counter()
            metrics.PROVIDER_LATENCY.labels("openai", "answer").observe(time.perf_counter() - began)
            if n % 10 == 0:
                metrics.PROVIDER_FAILURES.labels("openai", "answer", "unavailable").inc()
            LAST_CALLS.record("openai", "answer", failed if n % 10 == 0 else None)
        return (time.process_time() - started) / runs

    def per_record() -> float:
        started = time.process_time()
        for _ in range(runs):
            LAST_CALLS.record("openai", "answer")
        return (time.process_time() - started) / runs

    def per_change() -> float:
        started = time.process_time()
        for n in range(runs):
            LAST_CALLS.record("openai", "answer", failed if n % 2 else None)
        return (time.process_time() - started) / runs

    per_request()  # warm up: the routes bound, the series made
    return {
        "request": statistics.median(per_request() for _ in range(ROUNDS)) * 1e6,
        "provider call": statistics.median(per_call() for _ in range(ROUNDS)) * 1e6,
        "last call": statistics.median(per_record() for _ in range(ROUNDS)) * 1e6,
        "last call, changed": statistics.median(per_change() for _ in range(ROUNDS)) * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20000, help="operations a round")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # in the fresh interpreter
        print(json.dumps(measure(args.runs)))
        return
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    command = [sys.executable, __file__, "--measure", "--runs", str(args.runs)]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as folder:
        for mode, extra in (("one process", {}), ("several", {"PROMETHEUS_MULTIPROC_DIR": folder})):
            done = subprocess.run(command, env={**env, **extra}, capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
            results[mode] = json.loads(done.stdout)
    print(f"µs of CPU each (median of {ROUNDS} rounds of {args.runs})")
    print(f"{'':20}{'one process':>14}{'PROMETHEUS_MULTIPROC_DIR':>27}")
    for name in results["one process"]:
        one, several = results["one process"][name], results["several"][name]
        print(f"{name:20}{one:>14.2f}{several:>27.2f}")


if __name__ == "__main__":
    main()
