"""Handlers of the channel effects (``ragcore.channels.effects``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ragcore.channels.effects import (
    FireWorkflows,
    LoadRoles,
    MarkAnswered,
    SendReply,
)
from ragcore.channels.messages import InboundMessage
from ragcore.employees.roles import Role
from ragio.channels import discord, telegram, whatsapp
from ragio.channels.updates import mark_answered
from ragio.employees import store
from ragio.service import HandlerTable, Service
from ragio.workflows.dispatch import fire_workflows

#: how a reply reaches each channel
SENDERS: dict[str, Callable[[Service, InboundMessage, list[str]], Awaitable[None]]] = {
    "telegram": telegram.send_reply,
    "whatsapp": whatsapp.send_reply,
    "discord": discord.send_reply,
}


async def send_reply(effect: SendReply, service: Service) -> None:
    await SENDERS[effect.message.channel](service, effect.message, list(effect.parts))


async def load_roles(effect: LoadRoles, service: Service) -> list[Role]:
    return [stored.role for stored in await service.database.run(store.list_roles)]


async def mark(effect: MarkAnswered, service: Service) -> None:
    message = effect.message
    await service.database.run(mark_answered, message.channel, message.delivery_id)


async def fire(effect: FireWorkflows, service: Service) -> None:
    await fire_workflows(service, effect.channel, effect.message, effect.ai_reply, effect.context)


HANDLERS: HandlerTable = {
    SendReply: send_reply,
    LoadRoles: load_roles,
    MarkAnswered: mark,
    FireWorkflows: fire,
}
