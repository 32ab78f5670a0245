"""Taking a platform's message: its delivery claimed once (across redeliveries and
restarts, ``ragio.channels.updates``), then answered in the background, at most
``CONCURRENT_ANSWERS`` at once; and at start-up, the deliveries a stop cut off answered.

The webhooks acknowledge at once (platforms give up after 3 s, Discord, or about 15 s,
and retry when a webhook waits for an LLM), so the answering runs in a nursery that
outlives the request: the app's.
"""

from __future__ import annotations

import logging

import trio

from ragcore.channels.messages import InboundMessage
from ragio.channels.conversation import answer_message
from ragio.channels.updates import RESUME_WINDOW, claim_delivery, take_unanswered
from ragio.service import Service

log = logging.getLogger(__name__)
CONCURRENT_ANSWERS = 8  # channel answers in flight; the rest wait their turn


class Intake:
    """Claims deliveries and answers them in ``nursery``, sharing one limiter."""

    def __init__(self, service: Service, nursery: trio.Nursery) -> None:
        self.service = service
        self.nursery = nursery
        self.limiter = trio.CapacityLimiter(CONCURRENT_ANSWERS)

    async def take(self, message: InboundMessage) -> None:
        """Claim ``message``'s delivery and start answering it; a delivery already taken
        (a redelivery, even after a restart) is left alone."""
        svc = self.service
        if not await svc.database.run(claim_delivery, message, svc.clock.now()):
            log.info("%s delivery %s was already taken", message.channel, message.delivery_id)
            return
        self.answer_later(message)

    def answer_later(self, message: InboundMessage) -> None:
        async def answer() -> None:
            async with self.limiter:
                await answer_message(self.service, message)

        self.nursery.start_soon(answer)

    async def resume(self) -> None:
        """Answer the deliveries a stop or crash left unanswered (``ragio.channels.updates``).
        Never raises: the service starts either way."""
        svc = self.service
        try:
            messages, given_up = await svc.database.run(take_unanswered, svc.clock.now())
        except Exception:  # the service still starts; those customers wait for nothing
            log.exception("could not look for channel answers cut off by the last stop")
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
                "answering %s delivery %s cut off by the last stop",
                message.channel,
                message.delivery_id,
            )
            self.answer_later(message)
