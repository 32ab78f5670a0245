"""A tentative turn's run (``run(..., hold=)``): the effects that run ahead (reads, the
model call) go at once; any other waits for the hold, and never runs if the turn is
withdrawn (cancelled) first. Trio's autojump clock makes the times exact."""

from __future__ import annotations

from collections.abc import Generator
from types import SimpleNamespace
from typing import Any

import trio

from ragcore.chat.history import RecordTurn, TurnRecord
from ragcore.generation import Generate, ModelReply, Prompt
from ragio.runner import run
from ragio.service import Handlers

RECORD = RecordTurn(TurnRecord("voice", None, "Hours?", "9 to 5.", "answered"))
ASK = Generate(Prompt("Answer from the sources.", "Hours?", "Hours?", ()), 200, 0.0)


def answered() -> Generator[Any, Any, str]:
    reply = yield ASK
    yield RECORD
    return str(reply.text)


def service(started: list[tuple[str, float]]) -> Any:
    async def generate(effect: Generate, service: Any) -> ModelReply:
        started.append(("model", trio.current_time()))
        await trio.sleep(0.4)
        return ModelReply("9 to 5.", "fake", "fake")

    async def record(effect: RecordTurn, service: Any) -> None:
        started.append(("record", trio.current_time()))

    return SimpleNamespace(handlers=Handlers({Generate: generate, RecordTurn: record}, {}))


async def test_the_model_runs_ahead_and_the_record_waits_for_the_hold(autojump_clock):
    started: list[tuple[str, float]] = []
    hold = trio.Event()
    begun = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, answered(), service(started), None, hold)
        await trio.sleep(1.0)
        assert [name for name, _ in started] == ["model"]  # the record is held
        hold.set()
    assert [(name, round(at - begun, 3)) for name, at in started] == [
        ("model", 0.0),
        ("record", 1.0),
    ]


async def test_a_withdrawn_turn_never_runs_what_was_held(autojump_clock):
    started: list[tuple[str, float]] = []
    with trio.move_on_after(1.0):
        await run(answered(), service(started), None, trio.Event())
    assert [name for name, _ in started] == ["model"]


async def test_without_a_hold_every_effect_runs_in_turn(autojump_clock):
    started: list[tuple[str, float]] = []
    assert await run(answered(), service(started)) == "9 to 5."
    assert [name for name, _ in started] == ["model", "record"]
