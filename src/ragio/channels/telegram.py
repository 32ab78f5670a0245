"""Telegram replies (sendMessage), the rating buttons under an answer and the presses
of them (editMessageReplyMarkup, answerCallbackQuery: ``ragcore.channels.rating``), and
webhook registration (setWebhook)."""

from __future__ import annotations

import logging
from typing import Any

import httpx

from ragcore.channels import telegram
from ragcore.channels.messages import ButtonPress, InboundMessage
from ragcore.settings import Settings
from ragio.channels.outbound import SendFailed, call
from ragio.service import Service

log = logging.getLogger(__name__)
#: editMessageReplyMarkup's refusal of a keyboard the message has already (a press of
#: the rating already chosen): nothing to change
NOT_MODIFIED = "message is not modified"


def _url(settings: Settings, method: str) -> str:
    return settings.telegram_api_base_url + telegram.method_path(
        settings.telegram_bot_token, method
    )


async def send_reply(service: Service, message: InboundMessage, parts: list[str]) -> list[str]:
    """Each part as its own message, in order; the first one quotes the question. The ids
    Telegram gave them."""
    reply_to = message.reply_via.get("message_id")
    return await send_texts(
        service.outbound, service.settings, message.conversation, parts, reply_to
    )


async def offer_rating(
    service: Service, chat: str, message_id: str, conversation_id: int, turn: int
) -> None:
    """The rating buttons of turn ``turn`` of ``conversation_id`` under the message
    ``message_id`` in ``chat``. Never raises: Telegram's refusal is logged (the answer
    stands without them)."""
    markup = telegram.rating_keyboard(conversation_id, turn)
    await _edit_markup(service, chat, message_id, markup, "rating buttons not added")


async def show_rating(
    service: Service, press: ButtonPress, conversation_id: int, turn: int, rating: str
) -> None:
    """The pressed message's rating buttons again, ``rating`` marked as chosen. Never
    raises: Telegram's refusal is logged."""
    if press.message_id is None:
        return
    markup = telegram.rating_keyboard(conversation_id, turn, rating)
    await _edit_markup(service, press.conversation, press.message_id, markup, "rating not shown")


async def answer_press(service: Service, press: ButtonPress, text: str) -> None:
    """Answer the press with ``text`` (the presser's button stops spinning). Never
    raises: Telegram's refusal (a press answered too late) is logged."""
    body = telegram.answer_press_body(press.press_id, text)
    url = _url(service.settings, "answerCallbackQuery")
    try:
        _check_ok(await call(service.outbound, "telegram", "POST", url, json=body))
    except SendFailed as failure:
        log.warning("button press of delivery %s not answered: %s", press.delivery_id, failure)


async def _edit_markup(
    service: Service, chat: str, message_id: int | str, markup: dict[str, Any], what: str
) -> None:
    body = telegram.edit_markup_body(chat, message_id, markup)
    url = _url(service.settings, "editMessageReplyMarkup")
    try:
        _check_ok(await call(service.outbound, "telegram", "POST", url, json=body))
    except SendFailed as failure:
        if NOT_MODIFIED not in str(failure):
            log.warning("telegram: %s: %s", what, failure)


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
