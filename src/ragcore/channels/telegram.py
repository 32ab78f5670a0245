"""Telegram (Bot API): the webhook's secret check, the Update shape, sendMessage bodies.

Telegram proves a webhook request is its own by echoing the ``secret_token`` given to
``setWebhook`` in the ``X-Telegram-Bot-Api-Secret-Token`` header; nothing else is
signed. Only ``message`` updates are answered; other update kinds are acknowledged
and ignored, so Telegram stops redelivering them.
"""

from __future__ import annotations

import hmac
from typing import Any

from ragcore.channels.messages import (
    BadShape,
    Ignored,
    InboundMessage,
    Verification,
    json_object,
)
from ragcore.channels.replies import TELEGRAM_LIMIT

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name
LIMIT = TELEGRAM_LIMIT
ALLOWED_UPDATES = ("message",)
# message fields that carry something other than text, named as the polite reply names them
_UNREADABLE = (
    "sticker",
    "photo",
    "voice",
    "audio",
    "video",
    "video_note",
    "animation",
    "document",
    "location",
    "venue",
    "contact",
    "poll",
    "dice",
    "game",
)


def check_secret(configured: str, given: str | None, allow_unsigned: bool) -> Verification:
    """The header against TELEGRAM_WEBHOOK_SECRET, compared in constant time.

    No secret configured, or a missing or wrong header, is refused unless
    TELEGRAM_ALLOW_UNSIGNED lets it in (local testing only)."""
    if configured and given is not None and _same(configured, given):
        return Verification.ok()
    if not configured:
        reason = "TELEGRAM_WEBHOOK_SECRET is not set, so no request can be verified"
    elif given is None:
        reason = f"the {SECRET_HEADER} header is missing"
    else:
        reason = f"the {SECRET_HEADER} header does not match TELEGRAM_WEBHOOK_SECRET"
    if allow_unsigned:
        return Verification.unsigned(reason)
    return Verification.refused(reason)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def parse_update(body: bytes) -> InboundMessage | Ignored:
    """An Update read into an InboundMessage, or Ignored; BadShape if it is no Update."""
    update = json_object(body, "a Telegram Update")
    update_id = update.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool):
        raise BadShape("an update needs an integer update_id")
    if "message" not in update:
        kinds = sorted(k for k in update if k != "update_id")
        return Ignored(f"update kind {', '.join(kinds) or 'none'} is not answered")
    message = update["message"]
    if not isinstance(message, dict):
        raise BadShape("message must be an object")
    chat = message.get("chat")
    message_id = message.get("message_id")
    if not isinstance(chat, dict) or not _is_int(chat.get("id")) or not _is_int(message_id):
        raise BadShape("a message needs an integer message_id and a chat with an integer id")
    sender = message.get("from")
    if not isinstance(sender, dict):
        sender = {}
    if sender.get("is_bot"):
        return Ignored("messages from bots are not answered")
    common: dict[str, Any] = {
        "channel": "telegram",
        "delivery_id": str(update_id),
        "conversation": str(chat["id"]),
        "sender": str(sender.get("id", "")),
        "sender_name": _name(sender),
        "reply_via": {"message_id": message_id},
    }
    replied = message.get("reply_to_message")
    if isinstance(replied, dict) and _is_int(replied.get("message_id")):
        common["reply_via"]["replied_to"] = replied["message_id"]  # a notification answered
    text = message.get("text")
    if isinstance(text, str) and text.strip():
        return InboundMessage(text=text, **common)
    for kind in _UNREADABLE:
        if kind in message:
            return InboundMessage(text=_caption(message), kind=kind, **common)
    if text is not None:
        return InboundMessage(text="", kind="empty", **common)
    return Ignored("a service message (members joining, a title change …) is not answered")


def send_message_bodies(
    chat_id: str, parts: list[str], reply_to: int | None
) -> list[dict[str, Any]]:
    """The sendMessage JSON bodies for a reply in ``parts``; the first quotes the question.

    Plain text (no parse_mode), so nothing in an answer needs escaping."""
    bodies = []
    for index, part in enumerate(parts):
        body: dict[str, Any] = {
            "chat_id": int(chat_id) if _looks_int(chat_id) else chat_id,
            "text": part,
            "link_preview_options": {"is_disabled": True},
        }
        if index == 0 and reply_to is not None:
            body["reply_parameters"] = {
                "message_id": reply_to,
                "allow_sending_without_reply": True,
            }
        bodies.append(body)
    return bodies


def set_webhook_body(url: str, secret: str) -> dict[str, Any]:
    """The setWebhook body: our URL, the secret Telegram will echo, message updates only."""
    return {"url": url, "secret_token": secret, "allowed_updates": list(ALLOWED_UPDATES)}


def method_path(token: str, method: str) -> str:
    """``/bot<token>/<method>``, below TELEGRAM_API_BASE_URL. The path holds the token:
    never log it (ragio redacts it from the HTTP client's log)."""
    return f"/bot{token}/{method}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _looks_int(value: str) -> bool:
    return value.lstrip("-").isdigit()


def _name(user: dict[str, Any]) -> str:
    parts = [user.get("first_name"), user.get("last_name")]
    return " ".join(p for p in parts if isinstance(p, str) and p) or str(user.get("username", ""))


def _caption(message: dict[str, Any]) -> str:
    caption = message.get("caption")
    return caption if isinstance(caption, str) else ""
