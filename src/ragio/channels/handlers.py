"""Executing the channel effects (``ragcore.channels.effects``) for ``ragio.runner``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ragcore.channels.effects import (
    ChannelEffect,
    FireWorkflows,
    LoadRoles,
    MarkAnswered,
    SendReply,
)
from ragcore.channels.messages import InboundMessage
from ragio.channels import discord, telegram, whatsapp
from ragio.channels.updates import mark_answered
from ragio.employees import store
from ragio.workflows.dispatch import fire_workflows

#: how a reply reaches each channel
SENDERS: dict[str, Callable[[Any, InboundMessage, list[str]], Awaitable[None]]] = {
    "telegram": telegram.send_reply,
    "whatsapp": whatsapp.send_reply,
    "discord": discord.send_reply,
}


async def execute(effect: ChannelEffect, service: Any) -> Any:
    match effect:
        case SendReply(message=message, parts=parts):
            return await SENDERS[message.channel](service, message, list(parts))
        case LoadRoles():
            return [stored.role for stored in await service.database.run(store.list_roles)]
        case MarkAnswered(message=message):
            return await service.database.run(mark_answered, message.channel, message.delivery_id)
        case FireWorkflows(channel=channel, message=text, ai_reply=reply, context=context):
            return await fire_workflows(service, channel, text, reply, context)
    raise TypeError(f"no handler for channel effect {effect!r}")
