"""Telegram (Bot API): the webhook's secret check, the Update shape, sendMessage bodies,
and the rating buttons under an answer (an inline keyboard; ``ragcore.channels.rating``).

Telegram proves a webhook request is its own by echoing the ``secret_token`` given to
``setWebhook`` in the ``X-Telegram-Bot-Api-Secret-Token`` header; nothing else is
signed. ``message`` updates are answered, and ``callback_query`` updates (a button
pressed) are read as a ``ButtonPress``; other update kinds are acknowledged and
ignored, so Telegram stops redelivering them.
"""

from __future__ import annotations

import hmac
from typing import Any

from ragcore.channels.messages import (
    BadShape,
    ButtonPress,
    Ignored,
    InboundMessage,
    Verification,
    json_object,
)
from ragcore.channels.rating import RATINGS, rating_data
from ragcore.channels.replies import TELEGRAM_LIMIT

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name
LIMIT = TELEGRAM_LIMIT
ALLOWED_UPDATES = ("message", "callback_query")
#: the rating buttons' faces, and the mark of the one chosen
RATING_FACES = {"up": "👍", "down": "👎"}
CHOSEN_MARK = " ✓"
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


def parse_update(body: bytes) -> InboundMessage | ButtonPress | Ignored:
    """An Update read into an InboundMessage, a ButtonPress or Ignored; BadShape if it is
    no Update."""
    update = json_object(body, "a Telegram Update")
    update_id = update.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool):
        raise BadShape("an update needs an integer update_id")
    if "callback_query" in update and "message" not in update:
        return _press(update_id, update["callback_query"])
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


def _press(update_id: int, query: Any) -> ButtonPress | Ignored:
    """A CallbackQuery read into a ButtonPress: its id, the chat and message of the
    button (a message too old for Telegram to show still names both; a message sent in
    inline mode names neither: no chat to rate in), and its data."""
    if not isinstance(query, dict) or not isinstance(query.get("id"), str) or not query["id"]:
        raise BadShape("a callback_query needs a string id")
    data = query.get("data")
    if not isinstance(data, str):
        return Ignored("a callback_query without data (a game's) is not answered")
    message = query.get("message")
    chat = message.get("chat") if isinstance(message, dict) else None
    chat_id = chat.get("id") if isinstance(chat, dict) else None
    message_id = message.get("message_id") if isinstance(message, dict) else None
    sender = query.get("from")
    return ButtonPress(
        channel="telegram",
        delivery_id=str(update_id),
        press_id=query["id"],
        conversation=str(chat_id) if _is_int(chat_id) else "",
        message_id=message_id if _is_int(message_id) else None,
        data=data,
        sender=str(sender.get("id", "")) if isinstance(sender, dict) else "",
    )


def rating_keyboard(conversation_id: int, turn: int, chosen: str | None = None) -> dict[str, Any]:
    """The inline keyboard under an answer: 👍 and 👎, each rating turn ``turn`` of
    ``conversation_id``; the ``chosen`` one marked."""
    buttons = [
        {
            "text": RATING_FACES[rating] + (CHOSEN_MARK if rating == chosen else ""),
            "callback_data": rating_data(conversation_id, turn, rating),
        }
        for rating in RATINGS
    ]
    return {"inline_keyboard": [buttons]}


def edit_markup_body(chat_id: str, message_id: int | str, markup: dict[str, Any]) -> dict[str, Any]:
    """The editMessageReplyMarkup body: ``markup`` under message ``message_id`` in the chat."""
    return {"chat_id": _chat_id(chat_id), "message_id": int(message_id), "reply_markup": markup}


def answer_press_body(press_id: str, text: str) -> dict[str, Any]:
    """The answerCallbackQuery body: ``text`` shown to the presser (at most 200 characters)."""
    return {"callback_query_id": press_id, "text": text[:200]}


def send_message_bodies(
    chat_id: str, parts: list[str], reply_to: int | None
) -> list[dict[str, Any]]:
    """The sendMessage JSON bodies for a reply in ``parts``; the first quotes the question.

    Plain text (no parse_mode), so nothing in an answer needs escaping."""
    bodies = []
    for index, part in enumerate(parts):
        body: dict[str, Any] = {
            "chat_id": _chat_id(chat_id),
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
    """The setWebhook body: our URL, the secret Telegram will echo, and the updates read:
    messages, and buttons pressed."""
    return {"url": url, "secret_token": secret, "allowed_updates": list(ALLOWED_UPDATES)}


def method_path(token: str, method: str) -> str:
    """``/bot<token>/<method>``, below TELEGRAM_API_BASE_URL. The path holds the token:
    never log it (ragio redacts it from the HTTP client's log)."""
    return f"/bot{token}/{method}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _looks_int(value: str) -> bool:
    return value.lstrip("-").isdigit()


def _chat_id(chat_id: str) -> int | str:
    """A chat's id as the Bot API takes it: a number, or a channel's ``@username``."""
    return int(chat_id) if _looks_int(chat_id) else chat_id


def _name(user: dict[str, Any]) -> str:
    parts = [user.get("first_name"), user.get("last_name")]
    return " ".join(p for p in parts if isinstance(p, str) and p) or str(user.get("username", ""))


def _caption(message: dict[str, Any]) -> str:
    caption = message.get("caption")
    return caption if isinstance(caption, str) else ""
