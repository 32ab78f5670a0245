"""Taking a platform's message: its delivery claimed once (across redeliveries and
restarts, ``ragio.channels.updates``), then answered in the background, at most
``CONCURRENT_ANSWERS`` at once, and one chat's messages one after the other, in the
order they came (a customer's second message is read once the first one's turn is
recorded: after "Can I talk to a person?", the next line goes to the person, not to
the AI); a rating button's press is taken in the background at once: it asks no
model; and, at start-up and every ``RESUME_SECONDS``, the deliveries a stopped
process cut off answered (``watch``).

The webhooks acknowledge at once (platforms give up after 3 s, Discord, or about 15 s,
and retry when a webhook waits for an LLM), so the answering runs in a nursery that
outlives the request: the app's.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable

import trio

from ragcore.channels.messages import ButtonPress, InboundMessage
from ragio import metrics
from ragio.channels.conversation import answer_message, take_press
from ragio.channels.updates import (
    RESUME_SECONDS,
    RESUME_WINDOW,
    claim_delivery,
    take_unanswered,
)
from ragio.db import presence
from ragio.service import Service

log = logging.getLogger(__name__)
CONCURRENT_ANSWERS = 8  # channel answers in flight; the rest wait their turn


class Intake:
    """Claims deliveries and answers them in ``nursery``, sharing one limiter."""

    def __init__(self, service: Service, nursery: trio.Nursery) -> None:
        self.service = service
        self.nursery = nursery
        self.limiter = trio.CapacityLimiter(CONCURRENT_ANSWERS)
        self._occupancy = metrics.Occupancy(
            self.limiter, metrics.CHANNEL_ANSWERS, metrics.CHANNEL_ANSWERS_WAITING
        )
        self.answering = 0  # answers in flight
        self._idle = trio.Event()
        # per chat, the messages taken and not yet answered, in the order they came:
        # each one's event is set when its turn comes
        self._chats: dict[tuple[str, str], deque[trio.Event]] = {}

    async def take(self, message: InboundMessage) -> None:
        """Claim ``message``'s delivery and start answering it; a delivery already taken
        (a redelivery, even after a restart) is left alone."""
        svc = self.service
        if not await svc.database.run(claim_delivery, message, svc.clock.now(), svc.process):
            log.info("%s delivery %s was already taken", message.channel, message.delivery_id)
            return
        self.answer_later(message)

    def answer_later(self, message: InboundMessage) -> None:
        chat = (message.channel, message.conversation)
        queue = self._chats.setdefault(chat, deque())
        turn = trio.Event()
        if not queue:
            turn.set()
        queue.append(turn)  # now, not in the task: the order they came in

        async def answer() -> None:
            try:
                await turn.wait()
                async with self._occupancy:
                    await answer_message(self.service, message)
            finally:  # answered, failed or cancelled (a stop): the next one's turn
                queue.remove(turn)
                if queue:
                    queue[0].set()
                else:
                    del self._chats[chat]

        self._later(answer)

    def press_later(self, press: ButtonPress) -> None:
        """Take a button press in the background (a stop waits for it, as for an answer),
        without waiting for an answering place: a press asks no model, and its button
        spins until it is answered."""
        self._later(functools.partial(take_press, self.service, press))

    def _later(self, work: Callable[[], Awaitable[None]]) -> None:
        async def answer() -> None:
            try:
                await work()
            finally:
                self.answering -= 1
                if not self.answering:
                    self._idle.set()

        self.answering += 1
        self._idle = trio.Event()
        self.nursery.start_soon(answer)

    async def watch(self, stopped: trio.Event) -> None:
        """While the app serves: this process's presence on the database, and every
        RESUME_SECONDS the deliveries of gone processes answered. Once ``stopped`` and the
        answers in flight are sent, the process leaves: its deliveries are all answered."""
        svc = self.service
        await self.end_previous()
        resume_at = trio.current_time()
        while not stopped.is_set():
            await self.here()
            if trio.current_time() >= resume_at:
                await self.resume()
                resume_at = trio.current_time() + RESUME_SECONDS
            with trio.move_on_after(presence.PRESENCE_SECONDS):
                await stopped.wait()
        while self.answering:
            await self._idle.wait()
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await svc.database.run(presence.leave, svc.process)
            except Exception:  # noqa: BLE001 (taken for gone after GONE_AFTER instead)
                log.warning("could not record that this process stops")

    async def end_previous(self) -> None:
        """End the presence of this process's earlier incarnations on this machine (a
        quick restart), so the deliveries they were answering are resumed at once."""
        svc = self.service
        try:
            ended = await svc.database.run(presence.end_previous, svc.process)
        except Exception:  # noqa: BLE001 (they are taken for gone after GONE_AFTER instead)
            log.warning("could not end the presence of this process's earlier runs")
            return
        if ended:
            log.info("ended the presence of earlier runs on this machine: %s", ", ".join(ended))

    async def here(self) -> None:
        """This process runs (before it claims a delivery: what it holds is not resumed)."""
        svc = self.service
        try:
            await svc.database.run(presence.here, svc.process, svc.clock.now())
        except Exception:  # noqa: BLE001 (the database is down: the next beat tries)
            log.warning("could not record this process's presence on the database")

    async def resume(self) -> None:
        """Answer the deliveries a stopped process left unanswered
        (``ragio.channels.updates``). Never raises: the service goes on either way."""
        svc = self.service
        try:
            messages, given_up = await svc.database.run(
                take_unanswered, svc.clock.now(), svc.process
            )
        except Exception:  # the service still starts; those customers wait for nothing
            log.warning("could not look for channel answers cut off by a stopped process")
            return
        if given_up:
            log.warning(
                "%d channel deliveries left unanswered by an earlier stop were older than %s "
                "and are not answered now",
                given_up,
                RESUME_WINDOW,
            )
        for message in messages:
            log.info(
                "answering %s delivery %s cut off by a stopped process",
                message.channel,
                message.delivery_id,
            )
            self.answer_later(message)
