"""A person's message to the customer, on the customer's channel, at the address the
conversation keeps (``reply_to``: what the customer's last message came with).

- Telegram: ``sendMessage`` to the chat.
- WhatsApp: the Messages API, from the number the customer wrote to (WhatsApp delivers
  free text only within 24 hours of the customer's last message: the provider's refusal
  is reported as it comes).
- Discord: a message in the channel the customer asked in, mentioning them (with
  DISCORD_BOT_TOKEN); without it, a follow-up to their last interaction, which Discord
  takes for 15 minutes.
- The website chat: the visitor's page reads the conversation itself (``/widget/events``),
  so there is nothing to send.
"""

from __future__ import annotations

import logging
from typing import Any

from ragcore.channels import discord as discord_rules
from ragcore.handoff.effects import Delivered
from ragio.channels import telegram, whatsapp
from ragio.channels.outbound import SendFailed, call
from ragio.service import Service

log = logging.getLogger(__name__)


async def deliver(
    service: Service, channel: str, reply_to: dict[str, Any] | None, parts: list[str]
) -> Delivered:
    """Send ``parts`` to the customer; never raises."""
    if channel == "web":
        return Delivered(True, "shown in the website chat")
    if not reply_to:
        return Delivered(False, f"no address on {channel} is known for this customer")
    senders = {"telegram": _telegram, "whatsapp": _whatsapp, "discord": _discord}
    if channel not in senders:
        return Delivered(False, f"a conversation on {channel} cannot be written to")
    try:
        await senders[channel](service, reply_to, parts)
    except SendFailed as error:
        log.warning("a person's message was not delivered: %s", error)
        return Delivered(False, str(error))
    except Exception as error:  # an unexpected answer shape, a missing field
        log.warning("a person's message on %s was not delivered: %r", channel, error)
        return Delivered(False, f"{channel}: {type(error).__name__}")
    return Delivered(True, f"sent on {channel}")


async def _telegram(service: Service, reply_to: dict[str, Any], parts: list[str]) -> None:
    await telegram.send_texts(service.outbound, service.settings, reply_to["conversation"], parts)


async def _whatsapp(service: Service, reply_to: dict[str, Any], parts: list[str]) -> None:
    settings = service.settings
    sender = settings.whatsapp_from_number or reply_to["to_number"]
    await whatsapp.send_texts(service.outbound, settings, reply_to["conversation"], sender, parts)


async def _discord(service: Service, reply_to: dict[str, Any], parts: list[str]) -> None:
    settings = service.settings
    base = settings.discord_api_base_url
    if settings.discord_bot_token:
        headers = {"Authorization": f"Bot {settings.discord_bot_token}"}
        user = str(reply_to.get("sender", ""))
        for index, part in enumerate(parts):
            mention = index == 0 and user.isdigit()
            body = {
                "content": f"<@{user}> {part}" if mention else part,
                "allowed_mentions": {"users": [user]} if mention else {"parse": []},
            }
            url = f"{base}/channels/{reply_to['conversation']}/messages"
            await call(service.outbound, "discord", "POST", url, json=body, headers=headers)
        return
    path = discord_rules.followup_path(reply_to["application_id"], reply_to["token"])
    for part in parts:
        body = discord_rules.message_body(part)
        await call(service.outbound, "discord", "POST", base + path, json=body)
