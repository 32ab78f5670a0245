"""Where a turn's time went: each effect a pipeline's run executes is timed
(``measure``, around its handler in ``ragio.runner.execute``) and its time added to its
stage (``STAGE_OF``, by the effect's type: the one table of which effect is which stage);
the handler of ``RecordTurn`` reads the run's sums (``collected``) into the turn's
timings (``ragcore.chat.timings`` says what the stages are). Every channel's turn is
one run of the one turn pipeline, so every channel's turn is timed alike.

The run's sums are held in a context variable that ``ragio.runner.run`` sets for the run
(``collecting``) and restores when it ends. Trio gives each task a copy of the context
of the task that started it, and ``trio.to_thread`` runs its function in a copy too: a
run streamed from a task of its own (``ragio.runner.stream``, a call's answer) has its
own sums, and a run nested in another's effect has its own as well, the outer effect
counted once, in the outer run. Times are read from Trio's monotonic clock
(``trio.current_time``, as the call's pacing reads it), never from ``Service.clock``, the
wall clock a test may stop or move: a stopped wall clock leaves the stages as they were,
and under Trio's ``MockClock`` they are in its time.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import attrs
import trio

from ragcore.actions.effects import (
    FinishAction,
    LoadAutonomy,
    NewTicket,
    NoteAction,
    NotifyOwner,
    PerformAction,
    SaveAction,
)
from ragcore.answers.effects import FindOwnerAnswer
from ragcore.channels.effects import SendReply
from ragcore.chat.timings import stage_timings
from ragcore.chat.translation import TranslateWords
from ragcore.employees.memory import FetchRoleMemory
from ragcore.generation import Generate
from ragcore.knowledge.effects import Embed, FindMentions, SearchChunks
from ragcore.knowledge.graph import ReachGraph
from ragcore.language import DetectLanguage
from ragcore.live.answers import LoadLive, RecordLive
from ragcore.live.pipeline import RunLiveQuery

#: the stage of a turn (``ragcore.chat.timings.STAGES``) each kind of effect is timed
#: in; an effect not here (loading the conversation, the budgets, recording) is in the
#: turn's ``answer_ms`` only
STAGE_OF: dict[type, str] = {
    DetectLanguage: "language_ms",
    TranslateWords: "language_ms",
    LoadLive: "live_ms",
    RunLiveQuery: "live_ms",
    RecordLive: "live_ms",
    Embed: "embedding_ms",
    FindOwnerAnswer: "search_ms",
    SearchChunks: "search_ms",
    FindMentions: "search_ms",
    FetchRoleMemory: "search_ms",
    ReachGraph: "graph_ms",
    Generate: "model_ms",  # one effect: every provider tried, fallbacks included
    LoadAutonomy: "action_ms",
    NewTicket: "action_ms",
    SaveAction: "action_ms",
    NotifyOwner: "action_ms",
    NoteAction: "action_ms",
    PerformAction: "action_ms",
    FinishAction: "action_ms",
    SendReply: "reply_ms",
}


@attrs.define
class Collected:
    """A run's sums: the seconds spent in each stage, and when the model's first streamed
    text came (seconds from the run's start; None: none yet, or not streamed)."""

    began: float
    spent: dict[str, float] = attrs.Factory(dict)
    first_text: float | None = None

    def streamed(
        self, on_delta: Callable[[str], Awaitable[None]] | None
    ) -> Callable[[str], Awaitable[None]] | None:
        """``on_delta``, noting when the first text passes through it."""
        if on_delta is None:
            return None

        async def forward(delta: str) -> None:
            if self.first_text is None:
                self.first_text = trio.current_time() - self.began
            await on_delta(delta)

        return forward


_RUN: contextvars.ContextVar[Collected | None] = contextvars.ContextVar(
    "ragio.timings.run", default=None
)
_UNTIMED = nullcontext()


def collecting() -> AbstractContextManager[Collected]:
    """The sums of the run this surrounds (``ragio.runner.run``)."""
    return _Collecting()


class _Collecting:
    __slots__ = ("_token",)

    def __enter__(self) -> Collected:
        collected = Collected(trio.current_time())
        self._token = _RUN.set(collected)
        return collected

    def __exit__(self, *exc: object) -> None:
        _RUN.reset(self._token)


class _Timed:
    __slots__ = ("_began", "_collected", "_stage")

    def __init__(self, collected: Collected, stage: str) -> None:
        self._collected, self._stage, self._began = collected, stage, 0.0

    def __enter__(self) -> None:
        self._began = trio.current_time()

    def __exit__(self, *exc: object) -> None:
        spent = self._collected.spent
        spent[self._stage] = spent.get(self._stage, 0.0) + trio.current_time() - self._began


def measure(kind: type) -> AbstractContextManager[Any]:
    """Time an effect of type ``kind`` into its stage of the current run (nothing when it
    is in no stage, or runs outside a run); failed or cancelled, its time counts too."""
    collected = _RUN.get()
    stage = STAGE_OF.get(kind)
    if collected is None or stage is None:
        return _UNTIMED
    return _Timed(collected, stage)


def collected() -> dict[str, int]:
    """The current run's stage timings so far (``ragcore.chat.timings.stage_timings``);
    none outside a run."""
    run = _RUN.get()
    if run is None:
        return {}
    return stage_timings(run.spent, run.first_text)
