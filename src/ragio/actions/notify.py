"""Messaging the owner on ``approval_channel`` at ``approval_target``, unprompted.

- Telegram: ``sendMessage`` to the owner's chat id (TELEGRAM_BOT_TOKEN; the owner must
  have started a chat with the bot once).
- WhatsApp: the telephony provider's Messages API, from WHATSAPP_FROM_NUMBER to the
  owner's number (TELCO_ACCOUNT_SID, TELCO_AUTH_TOKEN). WhatsApp delivers a free-form
  message only within 24 hours of the owner's last message to the number.
- Discord: open a DM channel with the owner's user id, then post in it
  (DISCORD_BOT_TOKEN; the bot must share a server with the owner).

Calls go through ``ragio.channels.outbound.call`` (timeouts, a little retrying, failures
reported without credentials) to the same API base URLs the channel replies use.
"""

from __future__ import annotations

import logging

import httpx

from ragcore.actions.effects import Sent
from ragcore.channels import CHANNELS
from ragcore.channels.required import missing_settings as required_settings
from ragcore.channels.whatsapp import whatsapp_address
from ragcore.settings import Settings
from ragio.channels import telegram, whatsapp
from ragio.channels.outbound import SendFailed, call
from ragio.service import Service

log = logging.getLogger(__name__)
# under every platform's limit (Telegram 4096, WhatsApp 1600, Discord 2000 characters)
MAX_CHARS = 1500
NO_MENTIONS: dict[str, list[str]] = {"parse": []}


def missing_settings(settings: Settings, channel: str) -> list[str]:
    """What must be set before the owner can be messaged on ``channel``."""
    if channel not in CHANNELS:
        return [f"a known approval_channel (not {channel!r})"]
    return required_settings(settings, channel, "notify")


def shortened(text: str) -> str:
    """``text`` within ``MAX_CHARS``, cut with an ellipsis."""
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


async def notify_owner(service: Service, channel: str, target: str, text: str) -> Sent:
    """Send ``text`` to the owner; never raises."""
    sent, _ = await message_owner(service, channel, target, text)
    return sent


async def message_owner(
    service: Service, channel: str, target: str, text: str
) -> tuple[Sent, list[str]]:
    """Send ``text`` to the owner, cut to ``MAX_CHARS``; how it went, and the ids the
    platform gave the message where a reply names them (Telegram). Never raises."""
    missing = missing_settings(service.settings, channel)
    if missing:
        return Sent(False, f"set {', '.join(missing)} to message the owner on {channel}"), []
    text = shortened(text)
    senders = {"telegram": _telegram, "whatsapp": _whatsapp, "discord": _discord}
    try:
        ids = await senders[channel](service.outbound, service.settings, target, text)
    except SendFailed as error:
        log.warning("could not message the owner: %s", error)
        return Sent(False, str(error)), []
    except Exception as error:  # an unexpected answer shape: reported, never raised
        log.warning("could not message the owner on %s: %s", channel, type(error).__name__)
        return Sent(False, f"{channel}: {type(error).__name__}"), []
    return Sent(True, f"sent on {channel}"), ids


async def _telegram(
    client: httpx.AsyncClient, settings: Settings, chat_id: str, text: str
) -> list[str]:
    return await telegram.send_texts(client, settings, chat_id, [text])


async def _whatsapp(
    client: httpx.AsyncClient, settings: Settings, number: str, text: str
) -> list[str]:
    to = whatsapp_address(number)
    await whatsapp.send_texts(client, settings, to, settings.whatsapp_from_number, [text])
    return []


async def _discord(
    client: httpx.AsyncClient, settings: Settings, user_id: str, text: str
) -> list[str]:
    base = settings.discord_api_base_url
    headers = {"Authorization": f"Bot {settings.discord_bot_token}"}
    response = await call(
        client,
        "discord",
        "POST",
        f"{base}/users/@me/channels",
        json={"recipient_id": user_id},
        headers=headers,
    )
    channel_id = response.json().get("id")
    if not isinstance(channel_id, str) or not channel_id.isdigit():
        raise SendFailed("discord", "opening the DM channel gave no channel id")
    await call(
        client,
        "discord",
        "POST",
        f"{base}/channels/{channel_id}/messages",
        json={"content": text, "allowed_mentions": NO_MENTIONS},
        headers=headers,
    )
    return []
