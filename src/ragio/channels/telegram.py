"""Telegram replies (sendMessage) and webhook registration (setWebhook)."""

from __future__ import annotations

from typing import Any

import httpx

from ragcore.channels import telegram
from ragcore.channels.messages import InboundMessage
from ragcore.settings import Settings
from ragio.channels.outbound import SendFailed, call
from ragio.service import Service


def _url(settings: Settings, method: str) -> str:
    return settings.telegram_api_base_url + telegram.method_path(
        settings.telegram_bot_token, method
    )


async def send_reply(service: Service, message: InboundMessage, parts: list[str]) -> None:
    """Each part as its own message, in order; the first one quotes the question."""
    reply_to = message.reply_via.get("message_id")
    await send_texts(service.outbound, service.settings, message.conversation, parts, reply_to)


async def send_texts(
    client: httpx.AsyncClient,
    settings: Settings,
    chat_id: str,
    parts: list[str],
    reply_to: int | None = None,
) -> list[str]:
    """Each part as its own message to ``chat_id``, in order (the first quoting the
    message ``reply_to``); SendFailed unless Telegram took every one. The ids Telegram
    gave the messages (a reply to one of them names it)."""
    url = _url(settings, "sendMessage")
    sent: list[str] = []
    for body in telegram.send_message_bodies(chat_id, parts, reply_to):
        response = await call(client, "telegram", "POST", url, json=body)
        result = _check_ok(response).get("result")
        if isinstance(result, dict) and result.get("message_id") is not None:
            sent.append(str(result["message_id"]))
    return sent


async def set_webhook(client: httpx.AsyncClient, settings: Settings, url: str) -> str:
    """Register ``url`` with TELEGRAM_WEBHOOK_SECRET as its secret_token; Telegram's
    answer (its ``description``)."""
    body = telegram.set_webhook_body(url, settings.telegram_webhook_secret)
    response = await call(client, "telegram", "POST", _url(settings, "setWebhook"), json=body)
    return _check_ok(response).get("description", "webhook set")


def _check_ok(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise SendFailed("telegram", "the answer was not JSON", response.status_code) from None
    if not isinstance(body, dict) or body.get("ok") is not True:
        detail = body.get("description", "not ok") if isinstance(body, dict) else "not ok"
        raise SendFailed("telegram", str(detail)[:200], response.status_code)
    return body
