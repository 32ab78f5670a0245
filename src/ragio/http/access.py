"""Who a request comes from, as far as the API key says (SERVICE_API_KEY)."""

from __future__ import annotations

import hmac

from quart import request

from ragio.http.context import service


def presented_key() -> bytes:
    """The API key the request presents: ``X-API-Key``, or ``Authorization: Bearer``
    as OpenAI clients send it."""
    given = request.headers.get("X-API-Key")
    if given is None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else ""
    return given.encode("utf-8")


def holds_the_key() -> bool:
    """Whether the request may see what the key guards: it presents the key, or none is
    configured (the service then listens on loopback only). Compared in constant time."""
    configured = service().settings.service_api_key.encode("utf-8")
    return not configured or hmac.compare_digest(presented_key(), configured)
