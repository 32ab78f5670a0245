"""Who a request comes from, as far as its API key says: SERVICE_API_KEY (the owner), a
key made with /keys (``ragio.keys``), or none. ``admit`` runs before every route behind
the key: the key found, counted against its rate, and its scopes held against the route's
(``ragcore.api.keys.ROUTE_SCOPES``)."""

from __future__ import annotations

import hmac
from datetime import datetime

from quart import Response, g, request

from ragcore.api.keys import looks_like_key, only_own_conversations, refusal, retry_after
from ragio import keys, metrics
from ragio.http.context import service
from ragio.http.problems import Problem

HOLDER = "ragchat_holder"


def presented_key() -> bytes:
    """The API key the request presents: ``X-API-Key``, or ``Authorization: Bearer``
    as OpenAI clients send it."""
    given = request.headers.get("X-API-Key")
    if given is None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else ""
    return given.encode("utf-8")


def holds_the_key() -> bool:
    """Whether the request may see what the owner's key guards: it presents the key, or
    none is configured (the service then listens on loopback only). Compared in constant
    time."""
    configured = service().settings.service_api_key.encode("utf-8")
    return not configured or hmac.compare_digest(presented_key(), configured)


def rate_headers(limit: int, left: int, now: datetime) -> dict[str, str]:
    """A rate-limited key's state, in the IETF draft's RateLimit fields: its requests a
    minute, those left, and the seconds until the next minute's window."""
    return {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(left),
        "RateLimit-Reset": str(retry_after(now)),
    }


async def with_rate(response: Response) -> Response:
    """``response`` with the RateLimit fields of a rate-limited key's request. A
    coroutine, though it awaits nothing: Quart runs a plain function in a worker thread."""
    found = holder()
    if found.requests_per_minute:
        now = service().clock.now()
        response.headers.update(rate_headers(found.requests_per_minute, found.requests_left, now))
    return response


def holder() -> keys.Holder:
    """The request's key holder (``admit`` found it); the owner when no key is needed."""
    return getattr(g, HOLDER, keys.OWNER)


def conversations_key() -> int | None:
    """The key whose conversations alone the request may see (a chat key's), else None."""
    found = holder()
    return found.id if found.id is not None and only_own_conversations(found.scopes) else None


class Unknown(Exception):
    """No key the service knows was presented (the 401 says which way it came)."""


async def admit(path: str | None) -> None:
    """Find the request's key holder and let it through to ``path`` (the route, as the
    OpenAPI document writes it; None: no route, a 404 follows): Unknown when the key is
    not known and one is needed; a 401 problem when it was revoked or expired, 429 when
    over its rate, 403 when its scopes do not open the route.

    SERVICE_API_KEY is compared in constant time; another key is found by its SHA-256,
    read from the database on every request, so a revocation holds at once everywhere.
    With no SERVICE_API_KEY (loopback only), a request without a key is the owner's."""
    svc = service()
    configured = svc.settings.service_api_key.encode("utf-8")
    given = presented_key()
    if configured and hmac.compare_digest(given, configured):
        return
    text = given.decode("utf-8", "replace")
    found: keys.Holder | None = None
    if looks_like_key(text):
        now = svc.clock.now()
        admitted = await svc.database.run(keys.admit, text, now)
        if isinstance(admitted, keys.Refused):
            metrics.API_KEY_REQUESTS.labels(admitted.name, "refused").inc()
            raise Problem(401, admitted.why)
        if isinstance(admitted, keys.Limited):
            metrics.API_KEY_REQUESTS.labels(admitted.name, "limited").inc()
            limited = Problem(
                429, f"this API key's limit of {admitted.limit} requests a minute is reached"
            )
            limited.headers = {  # type: ignore[attr-defined]
                "Retry-After": str(retry_after(now)),
                **rate_headers(admitted.limit, 0, now),
            }
            raise limited
        found = admitted
    if found is None:
        if configured:
            raise Unknown()
        return
    setattr(g, HOLDER, found)
    keys.ASKING_KEY.set(found.name)
    if path is not None and (why := refusal(request.method, path, found.scopes)):
        metrics.API_KEY_REQUESTS.labels(found.name, "forbidden").inc()
        raise Problem(403, why)
    metrics.API_KEY_REQUESTS.labels(found.name, "allowed").inc()
