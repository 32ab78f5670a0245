"""The telephony provider's request signature (Twilio's wire format), for every request it
makes: WhatsApp webhooks, the voice webhook and the voice media stream's WebSocket upgrade.

The provider signs each request with HMAC-SHA1 keyed by the account's auth token, over
the URL it called followed by every POST parameter name and value, sorted by name (a
WebSocket upgrade has none), and sends the base64 digest in ``X-Twilio-Signature``. The
URL is the public one the provider was given (PUBLIC_BASE_URL, VOICE_PUBLIC_URL), not
the one this process sees behind a reverse proxy; like the provider's own validator, it
is tried with and without the default port, because the provider is not consistent
about it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ragcore.channels.messages import Verification

SIGNATURE_HEADERS = ("X-Twilio-Signature", "X-Telco-Signature")
DEFAULT_PORTS = {"https": 443, "wss": 443, "http": 80, "ws": 80}

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

    Missing or wrong is refused unless ``allow_unsigned`` (WHATSAPP_ALLOW_UNSIGNED,
    VOICE_ALLOW_UNSIGNED) lets it in; the caller logs a warning each time that happens."""
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


def form_params(body: bytes, mimetype: str) -> list[tuple[str, str]]:
    """A request's form parameters, in order, repeated names kept (all of them are
    signed); none when it is not a form."""
    if mimetype != "application/x-www-form-urlencoded":
        return []
    try:
        return parse_qsl(body.decode("utf-8"), keep_blank_values=True)
    except (UnicodeDecodeError, ValueError):
        return []


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
    port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
    with_port = urlunsplit(parts._replace(netloc=f"{prefix}{host}:{port}"))
    without_port = urlunsplit(parts._replace(netloc=f"{prefix}{host}"))
    return list(dict.fromkeys((url, without_port, with_port)))
