"""Live data in an answer: the step the chat pipeline takes before it searches.

Where a question was asked (``/chat``, a text channel, a phone call) and by whom decide
what runs: the enabled actions of that channel, the asker's pending question from their
last turn (a reply "4411" to "What is your order number?"), and ``{caller}`` (the
caller's phone number on a call). The runner holds the actions and the 5-minute cache
per service (``LoadLive``); every execution, a cached answer and a question asked are
logged for the owner, with the values as an HMAC only (``RecordLive``).
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime, timedelta
from typing import Any, TypeAlias

import attrs

from ragcore.effects import Effect
from ragcore.live.cache import Cache
from ragcore.live.matching import LiveAction, Pending
from ragcore.live.pipeline import (
    AskFor,
    LiveData,
    LiveFailed,
    LiveOutcome,
    NoMatch,
    RunLiveQuery,
    match_and_execute_action,
)

#: a question asked for a missing value holds for the asker's next message within this
PENDING_TTL = timedelta(minutes=30)


@attrs.frozen(eq=False)
class LiveContext:
    """What the runner holds for a question: the enabled actions, the service's results
    cache (a dict ``ragcore.live.cache`` updates in place), the time, and the asker's
    pending question (already taken: it holds for one message)."""

    actions: tuple[LiveAction, ...]
    cache: Cache
    now: datetime
    pending: Pending | None = None


@attrs.frozen
class LoadLive(Effect[LiveContext]):
    """The live-data context of a question asked on ``channel`` by ``asker`` (None: an
    anonymous caller, who has no pending question). No actions: nothing else is read."""

    runs_ahead = True

    channel: str
    asker: str | None


@attrs.frozen
class LiveRun:
    """One line of the execution log: ``outcome`` ran, cached, failed or asked; the
    ``values`` are hashed by the runner before they are stored."""

    action_id: int
    action_name: str
    values: tuple[tuple[str, str], ...]
    outcome: str
    row_count: int | None = None
    affected: int | None = None
    duration_ms: int = 0
    reason: str = ""


@attrs.frozen
class RecordLive(Effect[None]):
    """Log ``run`` on ``channel``, and keep ``pending`` (the question just asked) for the
    asker's next message until ``expires_at``."""

    channel: str
    asker: str | None
    run: LiveRun
    pending: Pending | None = None
    expires_at: datetime | None = None


#: what finding a question's live data asks for
LiveDataEffect: TypeAlias = LoadLive | RunLiveQuery | RecordLive


def live_data(
    channel: str,
    asker: str | None,
    user_identifier: str | None,
    question: str,
    language: str | None,
) -> Generator[LiveDataEffect, Any, LiveOutcome]:
    """The live data ``question`` calls for (``match_and_execute_action``), logged."""
    context: LiveContext = yield LoadLive(channel, asker)
    if not context.actions:
        return NoMatch()
    outcome = yield from match_and_execute_action(
        context.actions,
        question,
        user_identifier,
        channel,
        context.now,
        context.cache,
        language,
        context.pending,
    )
    run = run_of(outcome)
    if run is None:
        return outcome
    if isinstance(outcome, AskFor) and asker is not None:
        expires = context.now + PENDING_TTL
        yield RecordLive(channel, asker, run, outcome.pending, expires)
    else:
        yield RecordLive(channel, asker, run)
    return outcome


def run_of(outcome: LiveOutcome) -> LiveRun | None:
    """The log line of ``outcome``; None when no action matched."""
    if isinstance(outcome, NoMatch):
        return None
    action = outcome.action
    if isinstance(outcome, AskFor):
        return LiveRun(action.id, action.name, outcome.pending.values, "asked")
    if isinstance(outcome, LiveFailed):
        return LiveRun(
            action.id,
            action.name,
            outcome.values,
            "failed",
            duration_ms=outcome.duration_ms,
            reason=outcome.reason,
        )
    assert isinstance(outcome, LiveData)
    return LiveRun(
        action.id,
        action.name,
        outcome.values,
        "cached" if outcome.cached else "ran",
        row_count=len(outcome.rows),
        affected=outcome.affected,
        duration_ms=outcome.duration_ms,
    )
