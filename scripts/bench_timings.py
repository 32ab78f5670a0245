#!/usr/bin/env python3
"""The cost of timing a turn's stages (``ragio.timings``): the runner as it is against the
runner without the collector (its loop and ``execute`` as they were before it), on one
pipeline of a turn's shape whose handlers return at once, so that only the runner's own
work is timed. Rounds alternate in one process; the best round of each is compared.
Also the runner traced (``ragio.tracing``): a span for each effect, made by the
OpenTelemetry SDK and sent in batches to a local OTLP/HTTP receiver that keeps none.

    PYTHONPATH=src .venv/bin/python scripts/bench_timings.py
    PYTHONPATH=src .venv/bin/python scripts/bench_timings.py --turns 20000 --rounds 7
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Generator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.io.fakes.otlp_receiver import discarding_receiver  # noqa: E402

from ragcore.chat.history import LoadConversation, RecordTurn  # noqa: E402
from ragcore.generation import Generate  # noqa: E402
from ragcore.knowledge.effects import Embed, SearchChunks  # noqa: E402
from ragcore.language import DetectLanguage  # noqa: E402
from ragcore.live.answers import LoadLive  # noqa: E402
from ragcore.settings import load_settings  # noqa: E402
from ragcore.usage import CheckBudget, ReserveTokens, SettleTokens  # noqa: E402
from ragio import runner, timings, tracing  # noqa: E402
from ragio.service import Handlers  # noqa: E402
from ragio.tracing import Tracing  # noqa: E402

#: a turn's effects in order, as ``take_turn`` asks for them with a budget and no graph
TURN = (
    LoadConversation,
    CheckBudget,
    DetectLanguage,
    LoadLive,
    Embed,
    SearchChunks,
    SearchChunks,
    ReserveTokens,
    Generate,
    SettleTokens,
    RecordTurn,
)


def turn() -> Generator[Any, Any, int]:
    for kind in TURN:
        yield kind.__new__(kind)  # the handlers never read it
    return len(TURN)


async def at_once(effect: Any, service: Any) -> Any:
    return None


async def record(effect: Any, service: Any) -> Any:
    return timings.collected()  # what the RecordTurn handler reads


SERVICE = SimpleNamespace(
    handlers=Handlers({kind: at_once for kind in TURN} | {RecordTurn: record}, {})
)


async def run_before(pipeline: Generator[Any, Any, Any], service: Any) -> Any:
    """``ragio.runner.run`` and ``execute`` without the collector (as before it)."""
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect = pipeline.throw(failure) if failure else pipeline.send(result)
        except StopIteration as done:
            return done.value
        failure = None
        so_far = None
        try:
            result = await execute_before(effect, service, so_far)
        except trio.Cancelled:
            raise
        except Exception as error:
            failure = error


async def execute_before(effect: Any, service: Any, on_delta: Any = None) -> Any:
    handlers = service.handlers
    kind = type(effect)
    if on_delta is not None and kind in handlers.streaming:
        return await handlers.streaming[kind](effect, service, on_delta)
    handler = handlers.plain.get(kind)
    if handler is None:
        raise TypeError(f"no handler for effect {effect!r}")
    return await handler(effect, service)


def traced_tracing() -> Tracing:
    sink = discarding_receiver()
    endpoint = f"http://127.0.0.1:{sink.server_port}"
    return Tracing(load_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}))


async def timed(drive: Any, turns: int) -> float:
    began = time.perf_counter()
    for _ in range(turns):
        await drive(turn(), SERVICE)
    return (time.perf_counter() - began) / turns


async def bench(turns: int, rounds: int) -> None:
    before: list[float] = []
    after: list[float] = []
    await timed(runner.run, 1000)  # warm up
    await timed(run_before, 1000)
    for _ in range(rounds):
        before.append(await timed(run_before, turns))
        after.append(await timed(runner.run, turns))
    traced_runs: list[float] = []
    tracing_on = traced_tracing()
    with tracing.use(tracing_on.tracer):
        await timed(runner.run, 1000)
        for _ in range(rounds):
            traced_runs.append(await timed(runner.run, turns))
    tracing_on.shutdown()
    best_before, best_after = min(before), min(after)
    cost = best_after - best_before
    print(f"{len(TURN)} effects a turn, {turns} turns a round, best of {rounds} rounds")
    print(f"without the collector: {best_before * 1e6:8.2f} µs a turn")
    print(f"with the collector:    {best_after * 1e6:8.2f} µs a turn")
    print(f"cost: {cost * 1e6:.2f} µs a turn, {cost / len(TURN) * 1e6:.2f} µs an effect")
    print(f"ratio with/without: {best_after / best_before:.2f}")
    print(f"of a 200 ms turn: {cost / 0.2:.5%}")
    traced = min(traced_runs) - best_after
    print(f"traced:                {min(traced_runs) * 1e6:8.2f} µs a turn")
    print(f"tracing's cost: {traced * 1e6:.2f} µs a turn, {traced / len(TURN) * 1e6:.2f} µs a span")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trio.run(bench, args.turns, args.rounds)


if __name__ == "__main__":
    main()
