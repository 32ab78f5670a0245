"""The visitor's token: the widget's proof, on every call, of which site and visitor it
is, signed by the service (HMAC-SHA256 with the service's widget key) so that nobody can
make one or change one; and the verified identity of a logged-in customer.

A token is ``<claims>.<signature>``, both base64url: the claims are the site's public id,
the visitor (made by the service, never chosen by the client), the verified customer id
if any, when it was issued and expires, and the generation of the site's sessions. It is
refused when forged, expired, of another site, or of sessions since revoked (an older
generation). An expired token of the site may still renew the session (``renewable``)
for ``RENEW_DAYS``: the visitor and their conversation go on, without the client ever
naming a visitor.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

#: how long a token is good for; the widget renews it while the page is open
TOKEN_LIFETIME = timedelta(hours=1)
#: how long after it expired a token may still renew its visitor's session
RENEW_DAYS = 30
MAX_TOKEN_CHARS = 2048
MAX_USER_ID_CHARS = 200


@attrs.frozen
class VisitorClaims:
    site: str  # the site's public id
    visitor: str
    issued_at: datetime
    expires_at: datetime
    user: str | None = None  # the customer's verified id
    generation: int = 0  # the site's sessions when issued: revoking them makes a new one


class TokenRefused(Exception):
    """The token cannot be used; the message says why, in words a client may see (it
    tells nothing an attacker could use beyond "not valid")."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, b"widget-token:" + payload.encode("ascii"), hashlib.sha256).digest())


def issue(key: bytes, claims: VisitorClaims) -> str:
    body = {
        "s": claims.site,
        "v": claims.visitor,
        "iat": _milliseconds(claims.issued_at),
        "exp": _milliseconds(claims.expires_at),
        "g": claims.generation,
    }
    if claims.user is not None:
        body["u"] = claims.user
    payload = _b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    return f"{payload}.{_signature(key, payload)}"


def claims_of(key: bytes, token: str) -> VisitorClaims:
    """The claims of a token the service signed (whatever its age); TokenRefused for any
    other text. The signature is compared in constant time, before anything is read."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        raise TokenRefused("the visitor token is not valid")
    payload, signature = token.split(".")
    try:
        payload.encode("ascii")
        signature.encode("ascii")
    except UnicodeEncodeError:
        raise TokenRefused("the visitor token is not valid") from None
    if not hmac.compare_digest(_signature(key, payload), signature):
        raise TokenRefused("the visitor token is not valid")
    try:
        body: dict[str, Any] = json.loads(_unb64(payload))
        return VisitorClaims(
            site=str(body["s"]),
            visitor=str(body["v"]),
            issued_at=_moment(body["iat"]),
            expires_at=_moment(body["exp"]),
            user=str(body["u"]) if "u" in body else None,
            generation=int(body["g"]),
        )
    except (ValueError, KeyError, TypeError, binascii.Error):  # signed by us: never happens
        raise TokenRefused("the visitor token is not valid") from None


def _moment(milliseconds: Any) -> datetime:
    return datetime.fromtimestamp(int(milliseconds) / 1000, tz=UTC)


def _milliseconds(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def check(key: bytes, token: str, *, site: str, now: datetime, generation: int) -> VisitorClaims:
    """The claims of a token good for ``site`` at ``now``: signed by the service, of that
    site, not expired, and of the site's sessions as they are (``generation``: revoking
    them makes a new one). TokenRefused saying which otherwise."""
    claims = claims_of(key, token)
    if not hmac.compare_digest(claims.site.encode(), site.encode()):
        raise TokenRefused("the visitor token is for another site")
    if claims.expires_at <= now:
        raise TokenRefused("the visitor token has expired: start a new session")
    if claims.generation != generation:
        raise TokenRefused("the visitor token was revoked: start a new session")
    return claims


def renewable(
    key: bytes, token: str, *, site: str, now: datetime, generation: int
) -> VisitorClaims | None:
    """The claims of an earlier token whose visitor a new session may go on with: the
    service's own, of this site, not revoked, expired for under ``RENEW_DAYS``. None
    otherwise (a new visitor begins)."""
    try:
        claims = claims_of(key, token)
    except TokenRefused:
        return None
    if claims.site != site or claims.generation != generation:
        return None
    if claims.expires_at + timedelta(days=RENEW_DAYS) <= now:
        return None
    return claims


def user_hash(secret: str, user_id: str) -> str:
    """What the owner's server computes for a logged-in customer: hex HMAC-SHA256 of the
    customer's id with the site's identity secret (as Intercom's identity verification)."""
    return hmac.new(secret.encode("utf-8"), user_id.encode("utf-8"), hashlib.sha256).hexdigest()


def identity_verified(secret: str, user_id: str, given: str) -> bool:
    """Whether ``given`` is the hash of ``user_id`` with ``secret`` (constant time)."""
    expected = user_hash(secret, user_id)
    return hmac.compare_digest(expected.encode(), given.strip().lower().encode("utf-8"))
