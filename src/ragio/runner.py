"""Run a ragcore pipeline: execute each effect it yields and send the result back."""

from __future__ import annotations

import logging
from collections.abc import (
    Generator,
)
from datetime import UTC, datetime
from typing import Any, TypeVar

import trio

from ragcore.actions.effects import ActionEffect
from ragcore.channels.effects import ChannelEffect
from ragcore.effects import (
    CheckBudget,
    DetectLanguage,
    Embed,
    FetchRoleMemory,
    FindDocuments,
    Generate,
    LearnPattern,
    RecordInteraction,
    ReleaseTokens,
    ReserveTokens,
    SearchChunks,
    SettleTokens,
    StoreDocuments,
)
from ragcore.employees.learning import History
from ragcore.usage import Capped, Reservation
from ragio.actions import handlers as actions
from ragio.channels import handlers as channels
from ragio.employees import learning, memory
from ragio.knowledge import search, store
from ragio.providers.chain import (
    OnDelta,
    embed,
    generate_with_fallback,
    stream_with_fallback,
)
from ragio.usage import ledger

T = TypeVar("T")
log = logging.getLogger(__name__)
#: how long a cancelled pipeline may take to give back what it holds
UNWIND_SECONDS = 5.0
UNWIND_EFFECTS = (ReleaseTokens, SettleTokens)
#: how long a call that would fit once others settle waits for them (``_reserve``)
RESERVE_WAIT_SECONDS = 10.0


class Abandoned(Exception):
    """Thrown into a pipeline whose request went away (the client disconnected, the
    service is stopping), so its ordinary error handling gives back what it holds: a
    token reservation is released at once instead of counting until it goes stale."""


async def run(pipeline: Generator[Any, Any, T], service: Any, on_delta: OnDelta | None = None) -> T:
    """Drive ``pipeline`` to its return value, executing its effects against ``service``.

    With ``on_delta``, answers are streamed: each piece of text is passed to it as the
    provider produces it, and the pipeline still receives the whole reply.
    """
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect = pipeline.throw(failure) if failure else pipeline.send(result)
        except StopIteration as done:
            return done.value
        failure = None
        try:
            result = await execute(effect, service, on_delta)
        except trio.Cancelled:
            await unwind(pipeline, service)
            raise
        except Exception as error:  # the pipeline may handle it; if not, it re-raises
            failure = error


async def unwind(pipeline: Generator[Any, Any, Any], service: Any) -> None:
    """Throw ``Abandoned`` into a cancelled pipeline and execute only what gives back what
    it holds (``UNWIND_EFFECTS``), shielded and within ``UNWIND_SECONDS``; any other effect
    it asks for gets ``Abandoned`` too. Never raises: the cancellation goes on."""
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + UNWIND_SECONDS
        try:
            effect = pipeline.throw(Abandoned())
            while True:
                if isinstance(effect, UNWIND_EFFECTS):
                    effect = pipeline.send(await execute(effect, service))
                else:
                    effect = pipeline.throw(Abandoned())
        except (StopIteration, Abandoned):
            pass
        except Exception:
            log.warning("a cancelled request could not release what it held", exc_info=True)
    if scope.cancelled_caught:
        log.warning("a cancelled request took over %s s to release what it held", UNWIND_SECONDS)


async def execute(effect: Any, service: Any, on_delta: OnDelta | None = None) -> Any:
    match effect:
        case Embed(texts=texts, purpose=purpose):
            return await embed(service.embedder, texts, purpose)
        case SearchChunks():
            return await service.database.run(search.search, effect, service.embedder.space)
        case Generate():
            # rule 6: the primary, then LLM_FALLBACK_PROVIDERS (ragio.providers.chain)
            timeout = service.settings.provider_timeout_seconds
            if on_delta is not None and effect.stream:
                return await stream_with_fallback(service.answerer, effect, timeout, on_delta)
            return await generate_with_fallback(service.answerer, effect, timeout)
        case FindDocuments(content_hashes=digests):
            return await service.database.run(store.find_documents, digests)
        case StoreDocuments(documents=documents):
            return await service.database.run(store.store_documents, documents)
        case FetchRoleMemory(role=role):
            await memory.ensure_embedded(service, role)
            return await service.database.run(memory.context_items, effect)
        case DetectLanguage(text=text):
            return await service.language.detect(text)
        case CheckBudget():
            return await service.database.run(ledger.check, effect, datetime.now(UTC))
        case ReserveTokens():
            return await _reserve(effect, service)
        case SettleTokens(reservation_id=rid, provider=provider, model=model, usage=usage):
            return await service.database.run(ledger.settle, rid, provider, model, usage)
        case ReleaseTokens(reservation_id=rid):
            return await service.database.run(ledger.release, rid)
        case RecordInteraction() | LearnPattern():
            return await _learn(effect, service)
        case ActionEffect():  # outbound actions and approvals (ragcore.actions)
            return await actions.execute(effect, service)
        case ChannelEffect():  # answering a channel message (ragcore.channels.conversation)
            return await channels.execute(effect, service)
    raise TypeError(f"no handler for effect {effect!r}")


async def _reserve(effect: ReserveTokens, service: Any) -> Reservation | Capped:
    """A reservation, waiting up to RESERVE_WAIT_SECONDS while the caps are held only by
    calls in flight (``Capped.wait``): they usually settle for less than they hold, and a
    small cap then serves the next call instead of refusing it."""
    deadline = trio.current_time() + RESERVE_WAIT_SECONDS
    pause = 0.02
    while True:
        decision = await service.database.run(ledger.reserve, effect, datetime.now(UTC))
        if not (isinstance(decision, Capped) and decision.wait):
            return decision
        if trio.current_time() + pause > deadline:
            return decision
        await trio.sleep(pause)
        pause = min(pause * 2, 0.25)


async def _learn(effect: RecordInteraction | LearnPattern, service: Any) -> Any:
    """Learning never costs anyone their answer: a failure is logged and learns nothing."""
    try:
        if isinstance(effect, RecordInteraction):
            now = datetime.now(UTC)
            return await service.database.run(learning.record, effect, now)
        return await service.database.run(learning.learn, effect)
    except Exception:
        log.warning("learning from an answer failed; the answer is unaffected", exc_info=True)
        return History(recorded=False) if isinstance(effect, RecordInteraction) else None
