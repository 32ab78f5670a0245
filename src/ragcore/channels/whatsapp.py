"""WhatsApp through the telephony provider (Twilio's wire format): the webhook signature,
the incoming-message form, and Messages API bodies.

The provider signs each webhook with HMAC-SHA1 keyed by the account's auth token, over
the URL it called followed by every POST parameter name and value, sorted by name, and
sends the base64 digest in ``X-Twilio-Signature``. The URL is the public one the
provider was given (PUBLIC_BASE_URL), not the one this process sees behind a reverse
proxy; like the provider's own validator, it is tried with and without the default port,
because the provider is not consistent about it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from ragcore.channels.messages import BadShape, Ignored, InboundMessage, Verification
from ragcore.channels.replies import WHATSAPP_LIMIT
from ragcore.inputs import check_text_input

SIGNATURE_HEADERS = ("X-Twilio-Signature", "X-Telco-Signature")
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

Params = Sequence[tuple[str, str]]


def signature(auth_token: str, url: str, params: Params) -> str:
    """The provider's signature of a request to ``url`` with form ``params``."""
    names = sorted({name for name, _ in params})
    payload = url
    for name in names:
        for value in sorted({v for n, v in params if n == name}):
            payload += name + value
    mac = hmac.new(auth_token.encode("utf-8"), payload.encode("utf-8"), hashlib.sha1)
    return base64.b64encode(mac.digest()).decode("ascii")


def check_signature(
    auth_token: str, url: str, params: Params, given: str | None, allow_unsigned: bool
) -> Verification:
    """The signature header against TELCO_AUTH_TOKEN over ``url`` and ``params``.

    Missing or wrong is refused unless WHATSAPP_ALLOW_UNSIGNED lets it in (the caller
    logs a warning each time that happens)."""
    if auth_token and given:
        for variant in _url_variants(url):
            expected = signature(auth_token, variant, params)
            if hmac.compare_digest(expected.encode("ascii"), given.strip().encode("utf-8")):
                return Verification.ok()
    if not auth_token:
        reason = "TELCO_AUTH_TOKEN is not set, so no request can be verified"
    elif not given:
        reason = "the X-Twilio-Signature (or X-Telco-Signature) header is missing"
    else:
        reason = "the signature does not match this URL and body under TELCO_AUTH_TOKEN"
    if allow_unsigned:
        return Verification.unsigned(reason)
    return Verification.refused(reason)


def public_url(public_base_url: str, path: str, query: str) -> str:
    """The URL the provider called: PUBLIC_BASE_URL (which may carry a path prefix the
    proxy strips) joined with the path this process saw, and the query string."""
    url = public_base_url.rstrip("/") + path
    return f"{url}?{query}" if query else url


def _url_variants(url: str) -> list[str]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    userinfo = parts.netloc.rpartition("@")[0]
    prefix = f"{userinfo}@" if userinfo else ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    with_port = urlunsplit(parts._replace(netloc=f"{prefix}{host}:{port}"))
    without_port = urlunsplit(parts._replace(netloc=f"{prefix}{host}"))
    return list(dict.fromkeys((url, without_port, with_port)))


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
    common = {
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
