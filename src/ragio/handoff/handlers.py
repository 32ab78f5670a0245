"""Handlers of the handoff's effects (``ragcore.handoff.effects``)."""

from __future__ import annotations

import logging
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ragcore.handoff import effects
from ragcore.handoff.notices import Business
from ragio.handoff import store
from ragio.handoff.deliver import deliver
from ragio.handoff.notify import notify_handoff
from ragio.metrics import HANDOFF_FIRST_REPLY, HANDOFFS
from ragio.service import HandlerTable, Service

log = logging.getLogger(__name__)


async def move_mode(effect: effects.MoveMode, service: Service) -> bool:
    moved = await service.database.run(
        store.move_mode,
        effect.conversation_id,
        effect.to,
        effect.by,
        effect.detail,
        service.clock.now(),
        effect.from_modes,
    )
    if moved:
        log.info(
            "conversation %s moved to %s by %s: %s",
            effect.conversation_id,
            effect.to,
            effect.by,
            effect.detail,
        )
        if effect.to == "human":
            channel = await service.database.run(store.channel_of, effect.conversation_id)
            HANDOFFS.labels(channel or "unknown", effect.by).inc()
    return bool(moved)


async def load_business(effect: effects.LoadBusiness, service: Service) -> Business:
    found = await service.database.run(store.business)
    return Business(found["name"], found["opening_hours"], local_time(service, found["timezone"]))


def local_time(service: Service, zone: str) -> datetime | None:
    """Now on the business's wall clock; None without a time zone one can read."""
    if not zone:
        return None
    try:
        return service.clock.now().astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    except (ZoneInfoNotFoundError, ValueError):
        return None


async def notify(effect: effects.NotifyOwnerOfHandoff, service: Service) -> None:
    try:
        await notify_handoff(
            service, effect.conversation_id, effect.channel, effect.why, effect.message
        )
    except Exception:  # the conversation still waits in the inbox
        log.exception("telling the owner of conversation %s failed", effect.conversation_id)


async def load_handoff(
    effect: effects.LoadHandoff, service: Service
) -> effects.HandoffConversation | None:
    return await service.database.run(store.load_handoff, effect.conversation_id)


async def deliver_to_customer(
    effect: effects.DeliverToCustomer, service: Service
) -> effects.Delivered:
    return await deliver(service, effect.channel, effect.reply_to, list(effect.parts))


async def log_refused(effect: effects.LogRefused, service: Service) -> None:
    await service.database.run(
        store.log_refused, effect.conversation_id, effect.by, effect.detail, service.clock.now()
    )
    log.warning(
        "conversation %s: %s was refused: %s", effect.conversation_id, effect.by, effect.detail
    )


async def find_notified(effect: effects.FindNotified, service: Service) -> int | None:
    return await service.database.run(
        store.find_notified, effect.channel, effect.chat, effect.message_id
    )


async def person_replied(effect: effects.PersonReplied, service: Service) -> None:
    HANDOFF_FIRST_REPLY.labels(effect.channel).observe(effect.seconds)


HANDLERS: HandlerTable = {
    effects.PersonReplied: person_replied,
    effects.MoveMode: move_mode,
    effects.LoadBusiness: load_business,
    effects.NotifyOwnerOfHandoff: notify,
    effects.LoadHandoff: load_handoff,
    effects.DeliverToCustomer: deliver_to_customer,
    effects.LogRefused: log_refused,
    effects.FindNotified: find_notified,
}
