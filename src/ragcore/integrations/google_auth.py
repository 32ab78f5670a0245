"""A Google service account's sign-in, as a pure computation: the key file read, and the
signed JWT (RS256) that the key file's ``token_uri`` exchanges for an access token
(OAuth 2.0 JWT bearer grant, RFC 7523).

Signed here with ``cryptography`` rather than Google's auth library: that library's
transport is synchronous (it would block the Trio loop) and the assertion is a few lines.
RSA PKCS#1 v1.5 signatures are deterministic, so the same key and ``now`` give the same
assertion, and the tests check it byte for byte against what a verifier accepts.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

import attrs
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from ragcore.integrations.pages import Unusable

SCOPE = "https://www.googleapis.com/auth/spreadsheets.readonly"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
LIFETIME_SECONDS = 3600  # Google's longest


@attrs.frozen
class ServiceAccount:
    client_email: str
    private_key: str = attrs.field(repr=False)
    private_key_id: str | None
    token_uri: str


def service_account(key_file: str) -> ServiceAccount:
    """The fields of a service account's JSON key file that sign in; ``Unusable`` saying
    which is missing (the key itself never appears in the reason)."""
    try:
        data = json.loads(key_file)
    except ValueError:
        raise Unusable("Google Sheets: service_account_json is not JSON") from None
    if not isinstance(data, dict):
        raise Unusable("Google Sheets: service_account_json is not a key file object")
    if data.get("type", "service_account") != "service_account":
        raise Unusable("Google Sheets: service_account_json is not a service account's key")
    missing = [
        name
        for name in ("client_email", "private_key", "token_uri")
        if not isinstance(data.get(name), str) or not data[name].strip()
    ]
    if missing:
        raise Unusable(f"Google Sheets: service_account_json has no {', '.join(missing)}")
    key_id = data.get("private_key_id")
    return ServiceAccount(
        data["client_email"],
        data["private_key"],
        key_id if isinstance(key_id, str) else None,
        data["token_uri"],
    )


def assertion(account: ServiceAccount, now: datetime, scope: str = SCOPE) -> str:
    """The signed JWT: ``iss`` the account, ``scope``, ``aud`` the token URI, issued
    ``now`` and expiring an hour later."""
    issued = int(now.timestamp())
    header: dict[str, Any] = {"alg": "RS256", "typ": "JWT"}
    if account.private_key_id:
        header["kid"] = account.private_key_id
    claims = {
        "iss": account.client_email,
        "scope": scope,
        "aud": account.token_uri,
        "iat": issued,
        "exp": issued + LIFETIME_SECONDS,
    }
    signing_input = f"{_b64(_json(header))}.{_b64(_json(claims))}".encode("ascii")
    signature = _private_key(account).sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input.decode('ascii')}.{_b64(signature)}"


def token_form(account: ServiceAccount, now: datetime) -> dict[str, str]:
    """The token request's form body."""
    return {"grant_type": GRANT_TYPE, "assertion": assertion(account, now)}


def _private_key(account: ServiceAccount) -> rsa.RSAPrivateKey:
    try:
        key = serialization.load_pem_private_key(account.private_key.encode(), password=None)
    except (ValueError, TypeError):
        raise Unusable("Google Sheets: the key file's private_key is not a PEM key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise Unusable("Google Sheets: the key file's private_key is not an RSA key")
    return key


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
