"""The runner times a turn's effects by stage (``ragio.timings``): a run nested in another's
effect keeps its own sums and the outer effect counts once; a streamed run notes the
model's first text; a thread started by a handler sees its run's sums. Handlers that
take known times on Trio's autojump clock, so the stages are exact."""

from __future__ import annotations

from collections.abc import Generator
from types import SimpleNamespace
from typing import Any

import trio

from ragcore.chat.history import RecordTurn, TurnRecord
from ragcore.generation import Generate, ModelReply, Prompt
from ragcore.knowledge.effects import Embed
from ragio import timings
from ragio.runner import run
from ragio.service import Handlers

RECORD = RecordTurn(TurnRecord("chat", None, "Hours?", "9 to 5.", "answered"))
ASK = Generate(Prompt("Answer from the sources.", "Hours?", "Hours?", ()), 200, 0.0)


async def generate(effect: Generate, service: Any) -> ModelReply:
    await trio.sleep(0.3)
    return ModelReply("9 to 5.", "fake", "fake")


async def stream(effect: Generate, service: Any, on_delta: Any) -> ModelReply:
    await trio.sleep(0.2)
    await on_delta("9 to 5.")
    await trio.sleep(0.1)
    return ModelReply("9 to 5.", "fake", "fake")


async def embed_by_asking(effect: Embed, service: Any) -> list[Any]:
    """An effect that runs a pipeline of its own (0.3 s of model) then takes 0.1 s."""
    inner = await run(asked(), service)
    service.inner.append(inner)
    await trio.sleep(0.1)
    return [[0.0]]


async def record(effect: RecordTurn, service: Any) -> dict[str, int]:
    in_a_thread = await trio.to_thread.run_sync(timings.collected)
    assert in_a_thread == timings.collected()
    return timings.collected()


def asked() -> Generator[Any, Any, dict[str, int]]:
    yield ASK
    return (yield RECORD)


def embedded_then_asked() -> Generator[Any, Any, dict[str, int]]:
    yield Embed(("Hours?",))
    yield ASK
    return (yield RECORD)


def service() -> Any:
    handlers = {Generate: generate, Embed: embed_by_asking, RecordTurn: record}
    return SimpleNamespace(handlers=Handlers(handlers, {Generate: stream}), inner=[])


async def test_a_nested_run_has_its_own_stages_and_the_outer_effect_counts_once(autojump_clock):
    svc = service()
    outer = await run(embedded_then_asked(), svc)
    assert svc.inner == [{"model_ms": 300}]
    assert outer == {"embedding_ms": 400, "model_ms": 300}  # the inner run in the embedding


async def test_a_streamed_run_notes_the_models_first_text(autojump_clock):
    pieces: list[str] = []

    async def on_delta(text: str) -> None:
        pieces.append(text)

    taken = await run(asked(), service(), on_delta)
    assert taken == {"model_ms": 300, "first_token_ms": 200} and pieces == ["9 to 5."]
    assert await run(asked(), service()) == {"model_ms": 300}  # not streamed: no first text


async def test_runs_in_tasks_of_their_own_keep_their_own_stages(autojump_clock):
    found: list[dict[str, int]] = []

    async def one() -> None:
        found.append(await run(asked(), service()))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(one)
    assert found == [{"model_ms": 300}] * 3  # side by side, none counted in another
    assert timings.collected() == {}  # outside a run
