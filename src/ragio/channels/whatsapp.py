"""WhatsApp replies through the telephony provider's Messages API."""

from __future__ import annotations

import httpx

from ragcore.channels import whatsapp
from ragcore.channels.messages import InboundMessage
from ragcore.settings import Settings
from ragio.channels.outbound import call
from ragio.service import Service


async def send_reply(service: Service, message: InboundMessage, parts: list[str]) -> list[str]:
    """Each part as its own message, in order, from WHATSAPP_FROM_NUMBER or else from the
    number the customer wrote to. No ids: nothing here refers to a sent message later."""
    settings = service.settings
    sender = settings.whatsapp_from_number or message.reply_via["to_number"]
    await send_texts(service.outbound, settings, message.conversation, sender, parts)
    return []


async def send_texts(
    client: httpx.AsyncClient, settings: Settings, to: str, sender: str, parts: list[str]
) -> None:
    """Each part as its own message from ``sender`` to ``to`` (``whatsapp:+…``
    addresses), in order."""
    url = settings.telco_api_base_url + whatsapp.message_path(settings.telco_account_sid)
    auth = (settings.telco_account_sid, settings.telco_auth_token)
    for form in whatsapp.message_forms(to, sender, parts):
        await call(client, "whatsapp", "POST", url, data=form, auth=auth)
