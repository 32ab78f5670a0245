"""Answering one inbound message: choose the role, run the pipeline, send, call workflows.

Runs as a background task in the app's nursery after the webhook has acknowledged the
delivery, so it must never raise: every failure is logged, and a customer whose
question could not be answered is told so rather than left waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from ragcore.channels.messages import FAILED_REPLY, InboundMessage
from ragcore.channels.replies import render_reply, split_text
from ragcore.channels.routing import ReplyWith, plan_reply
from ragcore.chat.pipeline import ChatAnswer, ChatPolicy, ChatRequest, answer_question
from ragcore.errors import InvalidInput
from ragio.actions.approvals import handle_owner_reply
from ragio.channels import discord, telegram, whatsapp
from ragio.channels.outbound import SendFailed
from ragio.channels.updates import mark_answered
from ragio.employees import store
from ragio.runner import run
from ragio.workflows.dispatch import fire_workflows

log = logging.getLogger(__name__)


@attrs.frozen
class Platform:
    """How replies reach one channel."""

    limit: int  # UTF-16 units per message
    send: Callable[[Any, InboundMessage, list[str]], Awaitable[None]]


PLATFORMS = {
    "telegram": Platform(telegram.LIMIT, telegram.send_reply),
    "whatsapp": Platform(whatsapp.LIMIT, whatsapp.send_reply),
    "discord": Platform(discord.LIMIT, discord.send_reply),
}


async def answer_message(service: Any, message: InboundMessage) -> None:
    """Reply to ``message`` on its channel; after an AI answer is sent, call the
    workflows tied to the channel (SPEC section 6). Never raises. Once the reply is out
    (or could not be), the delivery is marked answered; an answer cut off by a stop is
    not, and is given at the next start (``ragio.channels.updates``)."""
    platform = PLATFORMS[message.channel]
    answered = None
    try:
        answered = await _reply(service, message, platform)
    except SendFailed as error:
        log.warning("reply to %s delivery %s not sent: %s", *_ids(message), error)
    except Exception:
        log.exception("reply to %s delivery %s failed", *_ids(message))
    try:
        await service.database.run(mark_answered, message.channel, message.delivery_id)
    except Exception:
        log.exception("could not mark %s delivery %s answered", *_ids(message))
    if answered is None:
        return
    answer, role = answered
    try:
        await fire_workflows(
            service, message.channel, message.text, answer.answer, _context(message, answer, role)
        )
    except Exception:  # the dispatcher never raises; this adapter does not trust that
        log.exception("workflows after %s delivery %s failed", *_ids(message))


async def _reply(
    service: Any, message: InboundMessage, platform: Platform
) -> tuple[ChatAnswer, str] | None:
    """Send the reply; the AI's answer and role when one was sent (None for a fixed
    reply: help, an unreadable message kind, a failure)."""
    if message.kind == "text":  # the owner's YES/NO to a held action goes no further
        decided = await handle_owner_reply(service, message.channel, message.sender, message.text)
        if decided is not None:
            await platform.send(service, message, split_text(decided, platform.limit))
            return None
    roles = [stored.role for stored in await service.database.run(store.list_roles)]
    plan = plan_reply(message, roles)
    if isinstance(plan, ReplyWith):
        await platform.send(service, message, split_text(plan.text, platform.limit))
        return None
    # the asker, for learning: one person on one channel (kept only as a hash)
    asker = f"{message.channel}:{message.sender or message.conversation}"
    # origin: a customer's conversation, where a proposed action always meets the gate
    request = ChatRequest(plan.question, employee=plan.role, asker=asker, origin=message.channel)
    try:
        answer = await run(
            answer_question(request, ChatPolicy.from_settings(service.settings)), service
        )
    except InvalidInput as error:  # the question is too long, say
        text = f"Sorry, I can't answer that: the question {error.message}."
        await platform.send(service, message, split_text(text, platform.limit))
        return None
    except Exception:
        log.exception("answering %s delivery %s failed", *_ids(message))
        await platform.send(service, message, [FAILED_REPLY])
        return None
    await platform.send(
        service, message, render_reply(answer.answer, answer.citations, platform.limit)
    )
    return answer, plan.role.identifier


def _context(message: InboundMessage, answer: ChatAnswer, role: str) -> dict[str, Any]:
    """What a workflow learns besides the message and the reply: who wrote, where, which
    role answered and from which sources. No platform credential (a Discord token) is
    in it."""
    return {
        "role": role,
        "delivery_id": message.delivery_id,
        "conversation": message.conversation,
        "sender": message.sender,
        "sender_name": message.sender_name,
        "language": answer.language,
        "limited": answer.limited,
        "citations": [
            {"number": c.number, "document_id": c.document_id, "document_name": c.document_name}
            for c in answer.citations
        ],
    }


def _ids(message: InboundMessage) -> tuple[str, str]:
    return message.channel, message.delivery_id
