"""WhatsApp through the telephony provider (Twilio's wire format): the incoming-message
form and Messages API bodies. Webhooks are verified by the provider's signature
(``ragcore.channels.telco``).
"""

from __future__ import annotations

from typing import Any

from ragcore.channels.messages import BadShape, Ignored, InboundMessage
from ragcore.channels.replies import WHATSAPP_LIMIT
from ragcore.channels.telco import Params
from ragcore.inputs import check_text_input

LIMIT = WHATSAPP_LIMIT
_MEDIA_KINDS = {"image": "image", "video": "video", "audio": "audio", "application": "document"}
_NON_TEXT_TYPES = {
    "image": "image",
    "video": "video",
    "audio": "audio",
    "document": "document",
    "sticker": "sticker",
    "location": "location",
    "contacts": "contact",
}


def parse_form(params: Params) -> InboundMessage | Ignored:
    """The incoming-message form read into an InboundMessage; a delivery receipt (a
    status callback pointed here) is Ignored; a form that is neither is BadShape."""
    first: dict[str, str] = {}
    for name, value in params:
        check_text_input(name, "form field names")
        first.setdefault(name, check_text_input(value, name))
    sid = first.get("MessageSid") or first.get("SmsMessageSid") or ""
    if not sid:
        raise BadShape("an incoming message needs MessageSid")
    if "Body" not in first and ("MessageStatus" in first or "SmsStatus" in first):
        return Ignored(f"status callback ({first.get('MessageStatus') or first['SmsStatus']})")
    sender, ours = first.get("From", ""), first.get("To", "")
    if not sender or not ours:
        raise BadShape("an incoming message needs From and To")
    common: dict[str, Any] = {
        "channel": "whatsapp",
        "delivery_id": sid,
        "conversation": sender,
        "sender": first.get("WaId") or sender,
        "sender_name": first.get("ProfileName", ""),
        "reply_via": {"to_number": ours},
    }
    body = first.get("Body", "")
    kind = _non_text_kind(first)
    if kind is not None:
        return InboundMessage(text=body, kind=kind, **common)
    if not body.strip():
        return InboundMessage(text="", kind="empty", **common)
    return InboundMessage(text=body, **common)


def _non_text_kind(first: dict[str, str]) -> str | None:
    try:
        media = int(first.get("NumMedia", "0") or "0")
    except ValueError:
        raise BadShape("NumMedia must be a whole number") from None
    if media > 0:
        content_type = first.get("MediaContentType0", "")
        if content_type == "image/webp":
            return "sticker"
        return _MEDIA_KINDS.get(content_type.partition("/")[0], "media")
    return _NON_TEXT_TYPES.get(first.get("MessageType", "").lower())


def message_path(account_sid: str) -> str:
    """The Messages API resource below TELCO_API_BASE_URL."""
    return f"/2010-04-01/Accounts/{account_sid}/Messages.json"


def message_forms(to: str, sender: str, parts: list[str]) -> list[dict[str, str]]:
    """The Messages API form bodies for a reply in ``parts``, sent from ``sender``."""
    return [{"To": to, "From": whatsapp_address(sender), "Body": part} for part in parts]


def whatsapp_address(number: str) -> str:
    """``whatsapp:+14155238886`` for a number given with or without the prefix."""
    number = number.strip()
    return number if number.startswith("whatsapp:") else f"whatsapp:{number}"
