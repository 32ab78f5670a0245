"""Telling the owner a conversation needs a person: on CHATOPS_WEBHOOK_URL (an incoming
webhook that Slack, Mattermost and Discord all read: ``{"text": …, "content": …}``) and
in the owner's chat, the approval identity of /autonomy (``ragio.actions.notify``).

On Telegram the notification's message ids are kept (``handoff_notifications``): the
owner's reply to one of them is their message to the customer. Never raises: a
notification that could not go out is logged, and the conversation waits in the inbox.
"""

from __future__ import annotations

import json
import logging

from ragcore.handoff.notices import forwarded_message, owner_notification
from ragio.actions import store as actions_store
from ragio.actions.handlers import post_json
from ragio.actions.notify import message_owner, shortened
from ragio.handoff import store
from ragio.service import Service

log = logging.getLogger(__name__)


def console_link(service: Service, conversation_id: int) -> str:
    """Where the owner answers: the console's inbox page of the conversation ('' when
    PUBLIC_BASE_URL is not set: the service does not know its own address)."""
    base = service.settings.public_base_url.rstrip("/")
    return f"{base}/#/inbox/{conversation_id}" if base else ""


async def notify_handoff(
    service: Service, conversation_id: int, channel: str, why: str, message: str | None
) -> None:
    """The owner told of a handoff (``why``), or passed a customer's new ``message``."""
    link = console_link(service, conversation_id)
    if message is None:
        last = await service.database.run(store.last_messages, conversation_id)
        text = owner_notification(conversation_id, channel, why, last, link)
        await _chatops(service, text)
    else:
        text = forwarded_message(conversation_id, channel, message, link)
    await _owner_chat(service, conversation_id, text)


async def _chatops(service: Service, text: str) -> None:
    url = service.settings.chatops_webhook_url
    if not url:
        return
    # Discord takes 2,000 characters of content
    body = json.dumps({"text": text, "content": shortened(text)}, ensure_ascii=False).encode()
    try:
        sent = await post_json(service.settings, "chat-ops", url, body)
    except Exception:  # never raises into the turn
        log.exception("the chat-ops notification of a handoff failed")
        return
    if not sent.ok:
        log.warning("the chat-ops notification of a handoff was not sent: %s", sent.detail)


async def _owner_chat(service: Service, conversation_id: int, text: str) -> None:
    autonomy = await service.database.run(actions_store.load_autonomy)
    if not autonomy.owner_set:
        return
    channel, target = str(autonomy.approval_channel), str(autonomy.approval_target)
    sent, ids = await message_owner(service, channel, target, text)
    if not sent.ok:
        log.warning("the owner was not told of a handoff on %s: %s", channel, sent.detail)
    elif ids:  # a reply to one of them is the owner's message to the customer
        await service.database.run(
            store.save_notification, channel, target, ids, conversation_id, service.clock.now()
        )
