"""A conversation's turn over HTTP: ``ragcore.chat.turn.take_turn`` run whole (/chat, a
plain /v1 completion) or streamed as server-sent events (/chat/stream, a streamed /v1
completion). The routes only say how their wire writes each event (``TurnWire``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Protocol

import attrs
from quart import Response, current_app

from ragcore.api.keys import only_own_conversations
from ragcore.chat.pipeline import ChatAnswer, ChatPolicy
from ragcore.chat.turn import TurnOutcome, TurnRequest, take_turn
from ragio.chat.policy import chat_policy
from ragio.http.access import holder
from ragio.http.context import service
from ragio.runner import run, stream

log = logging.getLogger(__name__)


class TurnWire(Protocol):
    """How a streamed answer is written on one protocol's wire."""

    def opening(self) -> Iterable[bytes]:
        """What goes out before the first piece of text."""
        ...

    def token(self, text: str) -> bytes:
        """A piece of the answer's text."""
        ...

    def failed(self, error: Exception) -> bytes:
        """The turn failed after text had gone out."""
        ...

    def done(self, answer: ChatAnswer, streamed: bool) -> Iterable[bytes]:
        """The whole answer (``streamed``: its text already went out piece by piece)."""
        ...

    def closing(self) -> Iterable[bytes]:
        """What ends the stream, however the turn went."""
        ...


def answered(outcome: TurnOutcome, channel: str) -> ChatAnswer:
    """The turn's answer; what went wrong on its way (its conversation not loaded or the
    turn not recorded) is logged: the asker still has their answer."""
    for failure in outcome.failures:
        log.error("a turn of a conversation on %s: %s", channel, failure, exc_info=failure)
    return outcome.answer


def keyed(turn: TurnRequest) -> tuple[TurnRequest, ChatPolicy]:
    """The turn as the request's API key asks it, and the policy it is answered under: a
    conversation it begins is the key's (a chat key continues only its own), and its
    model tokens are counted as the key's and held to its tokens_per_day (counted even
    with USAGE_LEDGER off, when the key has that limit)."""
    policy = chat_policy(service())
    found = holder()
    if found.id is None:
        return turn, policy
    own = only_own_conversations(found.scopes)
    turn = attrs.evolve(turn, api_key_id=found.id, own_conversations_only=own)
    caps = attrs.evolve(policy.caps, key_id=found.id, key_daily=found.tokens_per_day)
    metered = policy.usage_ledger or bool(found.tokens_per_day)
    return turn, attrs.evolve(policy, caps=caps, usage_ledger=metered)


async def answer_turn(turn: TurnRequest) -> ChatAnswer:
    """The turn answered and recorded; a failure is raised (recorded first)."""
    svc = service()
    turn, policy = keyed(turn)
    return answered(await run(take_turn(turn, policy), svc), turn.channel)


async def stream_turn(
    turn: TurnRequest,
    wire: TurnWire,
    after: Callable[[ChatAnswer], Awaitable[None]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The turn as an event stream written by ``wire``. A failure before the first piece
    of text is raised here, while the response can still say so with its status.
    ``after``: what the route does with the answer once it is out (a failure of it is
    logged); ``headers``: the response's own, beside the stream's."""
    svc = service()
    nursery = current_app.nursery  # type: ignore[attr-defined]
    turn, policy = keyed(turn)
    pieces = await stream(take_turn(turn, policy), svc, nursery)

    async def events() -> AsyncIterator[bytes]:
        streamed = False
        try:
            for opening in wire.opening():
                yield opening
            async for _, payload in pieces:
                if isinstance(payload, str):
                    streamed = True
                    yield wire.token(payload)
                elif isinstance(payload, Exception):
                    log.error("a streamed answer on %s failed", turn.channel, exc_info=payload)
                    yield wire.failed(payload)
                else:
                    answer = answered(payload, turn.channel)
                    for event in wire.done(answer, streamed):
                        yield event
                    if after is not None:
                        try:
                            await after(answer)
                        except Exception:
                            log.exception("after a streamed answer on %s", turn.channel)
            for closing in wire.closing():
                yield closing
        finally:
            pieces.cancel()  # the client went away, or we are done

    return Response(
        events(),
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})},
    )
