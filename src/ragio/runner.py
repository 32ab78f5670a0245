"""Run a ragcore pipeline: execute each effect it yields and send the result back.

The runner knows no effect: each area of ragio exports the handlers of its effects
(``HANDLERS`` in its ``handlers`` module), ``ragio.registry`` merges them into one
``Handlers`` table at import, and the service carries it here (``service.handlers``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Generator
from typing import Any, Generic, Literal, TypeVar

import trio

from ragcore.generation import Abandoned, ModelReply
from ragio import timings, tracing
from ragio.providers.chain import OnDelta, SoFar
from ragio.service import Service

T = TypeVar("T")
log = logging.getLogger(__name__)
#: how long a cancelled pipeline may take to give back what it holds
UNWIND_SECONDS = 5.0


async def run(
    pipeline: Generator[Any, Any, T],
    service: Service,
    on_delta: OnDelta | None = None,
    hold: trio.Event | None = None,
) -> T:
    """Drive ``pipeline`` to its return value, executing its effects against ``service``.

    With ``on_delta``, answers are streamed: each piece of text is passed to it as the
    provider produces it, and the pipeline still receives the whole reply. The time its
    effects take is summed by stage for the turn's record (``ragio.timings``).

    With ``hold`` (a tentative turn's: ``ragcore.voice.call``), an effect that changes
    something others see waits until it is set; those that run ahead
    (``Effect.runs_ahead``: reads, the model call) do not.
    """
    with timings.collecting() as collected:
        return await _drive(pipeline, service, collected.streamed(on_delta), hold)


async def _drive(
    pipeline: Generator[Any, Any, T],
    service: Service,
    on_delta: OnDelta | None,
    hold: trio.Event | None = None,
) -> T:
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect = pipeline.throw(failure) if failure else pipeline.send(result)
        except StopIteration as done:
            return done.value
        failure = None
        so_far = SoFar(on_delta) if on_delta is not None else None
        try:
            if hold is not None and not getattr(effect, "runs_ahead", False):
                await hold.wait()
            result = await execute(effect, service, so_far)
        except trio.Cancelled:  # a reply cut off mid-stream is settled with what it spent
            await unwind(pipeline, service, so_far.reply() if so_far else None)
            raise
        except Exception as error:  # the pipeline may handle it; if not, it re-raises
            failure = error


Piece = (
    tuple[Literal["token"], str] | tuple[Literal["done"], T] | tuple[Literal["failed"], Exception]
)


class Streamed(Generic[T]):
    """A pipeline running in the background, its answer streamed: iterating gives each
    piece of text as ``("token", text)``, then ``("done", result)`` or, when it failed
    after text had flowed, ``("failed", error)``. ``cancel`` stops it (the client left)."""

    def __init__(self, first: Piece[T], rest: trio.MemoryReceiveChannel[Piece[T]], scope: Any):
        self._first, self._rest, self._scope = first, rest, scope

    async def __aiter__(self) -> AsyncIterator[Piece[T]]:
        yield self._first
        async for piece in self._rest:
            yield piece

    def cancel(self) -> None:
        self._scope.cancel()


async def stream(
    pipeline: Generator[Any, Any, T], service: Service, nursery: trio.Nursery
) -> Streamed[T]:
    """Start ``pipeline`` in ``nursery`` (one that outlives the caller) and wait for its
    first piece of text or its end. What it raised before any text is raised here, while
    a response can still say so with its status."""
    send, receive = trio.open_memory_channel[Piece[T]](64)

    async def produce(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            async with send:
                try:
                    result = await run(pipeline, service, lambda d: send.send(("token", d)))
                except Exception as error:  # handed to the reader, which reports it
                    await send.send(("failed", error))
                else:
                    await send.send(("done", result))

    scope = await nursery.start(produce)
    try:
        first = await receive.receive()
    except BaseException:
        scope.cancel()
        raise
    if first[0] == "failed":
        raise first[1]
    return Streamed(first, receive, scope)


async def unwind(
    pipeline: Generator[Any, Any, Any], service: Service, partial: ModelReply | None = None
) -> None:
    """Throw ``Abandoned`` into a cancelled pipeline (with ``partial``, the reply its
    ``Generate`` had streamed so far) and execute only the effects that give back what it
    holds (``Effect.gives_back``), shielded and within ``UNWIND_SECONDS``; any other effect
    it asks for gets ``Abandoned`` too. Never raises: the cancellation goes on."""
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + UNWIND_SECONDS
        try:
            effect = pipeline.throw(Abandoned(partial))
            while True:
                if getattr(effect, "gives_back", False):
                    effect = pipeline.send(await execute(effect, service))
                else:
                    effect = pipeline.throw(Abandoned())
        except (StopIteration, Abandoned):
            pass
        except Exception:
            log.warning("a cancelled request could not release what it held", exc_info=True)
    if scope.cancelled_caught:
        log.warning("a cancelled request took over %s s to release what it held", UNWIND_SECONDS)


async def execute(effect: Any, service: Service, on_delta: OnDelta | None = None) -> Any:
    """The result of ``effect``, by the handler the service's table has for its type."""
    handlers = service.handlers
    kind = type(effect)
    with timings.measure(kind), tracing.effect_span(kind):
        if on_delta is not None and kind in handlers.streaming:
            return await handlers.streaming[kind](effect, service, on_delta)
        handler = handlers.plain.get(kind)
        if handler is None:
            raise TypeError(f"no handler for effect {effect!r}")
        return await handler(effect, service)
