"""Handlers of the channel effects (``ragcore.channels.effects``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ragcore.channels.effects import (
    AnswerPress,
    FireWorkflows,
    LoadRoles,
    MarkAnswered,
    OfferRating,
    RateInChat,
    SendReply,
    ShowRating,
)
from ragcore.channels.messages import InboundMessage
from ragcore.chat.history import place_key
from ragcore.employees.roles import Role
from ragio.channels import discord, telegram, whatsapp
from ragio.channels.updates import mark_answered
from ragio.chat.feedback import rate
from ragio.employees import store
from ragio.service import HandlerTable, Service
from ragio.workflows.dispatch import fire_workflows

#: how a reply reaches each channel; the ids of the messages sent
SENDERS: dict[str, Callable[[Service, InboundMessage, list[str]], Awaitable[list[str]]]] = {
    "telegram": telegram.send_reply,
    "whatsapp": whatsapp.send_reply,
    "discord": discord.send_reply,
}


async def send_reply(effect: SendReply, service: Service) -> tuple[str, ...]:
    sent = await SENDERS[effect.message.channel](service, effect.message, list(effect.parts))
    return tuple(sent)


# The rating buttons are Telegram's (ragcore.channels.rating.RATED_CHANNELS).


async def offer_rating(effect: OfferRating, service: Service) -> None:
    chat = effect.message.conversation
    await telegram.offer_rating(service, chat, effect.sent, effect.conversation_id, effect.turn)


async def rate_in_chat(effect: RateInChat, service: Service) -> bool:
    """Rated only as an AI answer of the conversation at the chat's place (its key)."""
    place = (effect.channel, place_key(effect.channel, effect.chat))
    return await rate(service, effect.conversation_id, effect.turn, effect.rating, place=place)


async def answer_press(effect: AnswerPress, service: Service) -> None:
    await telegram.answer_press(service, effect.press, effect.text)


async def show_rating(effect: ShowRating, service: Service) -> None:
    await telegram.show_rating(
        service, effect.press, effect.conversation_id, effect.turn, effect.rating
    )


async def load_roles(effect: LoadRoles, service: Service) -> list[Role]:
    return [stored.role for stored in await service.database.run(store.list_roles)]


async def mark(effect: MarkAnswered, service: Service) -> None:
    message = effect.message
    await service.database.run(mark_answered, message.channel, message.delivery_id)


async def fire(effect: FireWorkflows, service: Service) -> None:
    await fire_workflows(service, effect.channel, effect.message, effect.ai_reply, effect.context)


HANDLERS: HandlerTable = {
    SendReply: send_reply,
    OfferRating: offer_rating,
    RateInChat: rate_in_chat,
    AnswerPress: answer_press,
    ShowRating: show_rating,
    LoadRoles: load_roles,
    MarkAnswered: mark,
    FireWorkflows: fire,
}
