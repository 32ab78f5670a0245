"""A fake Google OAuth 2.0 token endpoint and Sheets API v4 on 127.0.0.1.

``POST /token`` takes the JWT bearer grant (``grant_type=urn:ietf:params:oauth:grant-type:
jwt-bearer``, ``assertion``) and verifies the assertion as Google does: an RS256
signature by the service account's key (the public half of a key pair the test made),
``iss`` the account, ``aud`` this token URI, the read-only Sheets ``scope``, and ``iat``/
``exp`` at most an hour apart and current. ``GET /v4/spreadsheets/{id}`` (``fields=sheets.
properties.title``) and ``GET /v4/spreadsheets/{id}/values/{range}`` answer with a value
range (``{"range", "majorDimension": "ROWS", "values"}``, trailing empty cells and rows
dropped as Google drops them) for the access token it issued, and Google's errors:
``{"error": "invalid_grant", "error_description"}`` from the token endpoint,
``{"error": {"code", "message", "status"}}`` from the API."""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

SCOPE = "https://www.googleapis.com/auth/spreadsheets.readonly"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
EMAIL = "ragchat-reader@example-project.iam.gserviceaccount.com"


class TokenError(WireError):
    def __init__(self, error: str, description: str, status: int = 400):
        body = {"error": error, "error_description": description}
        super().__init__(status, description, body, None)


class ApiError(WireError):
    _STATUS = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        503: "UNAVAILABLE",
    }

    def __init__(self, code: int, message: str):
        status = self._STATUS.get(code, "INTERNAL")
        super().__init__(
            code, message, {"error": {"code": code, "message": message, "status": status}}, None
        )


def key_pair() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_file(key: rsa.RSAPrivateKey, token_uri: str, email: str = EMAIL) -> str:
    """A service account's JSON key file, as the Cloud console downloads it."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "example-project",
            "private_key_id": "0123456789abcdef",
            "private_key": pem,
            "client_email": email,
            "client_id": "100000000000000000001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": token_uri,
            "universe_domain": "googleapis.com",
        }
    )


def _column(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - ord("A") + 1
    return n - 1


_CELLS = re.compile(r"^([A-Za-z]*)(\d*)(?::([A-Za-z]*)(\d*))?$")


class FakeGoogleSheets(FakeServer):
    def __init__(self, public_key: rsa.RSAPublicKey, email: str = EMAIL) -> None:
        super().__init__(api_key="", reply="")
        self.public_key = public_key
        self.email = email
        #: spreadsheet id -> sheet title -> rows; ``shared`` lists those the account may read
        self.spreadsheets: dict[str, dict[str, list[list[str]]]] = {}
        self.shared: set[str] = set()
        self.tokens: set[str] = set()
        self.assertions: list[dict[str, Any]] = []

    @property
    def token_uri(self) -> str:
        return self.base_url + "/token"

    def add(self, sheet_id: str, sheets: dict[str, list[list[str]]], shared: bool = True) -> None:
        self.spreadsheets[sheet_id] = sheets
        if shared:
            self.shared.add(sheet_id)

    async def _answer(self, request: Recorded, send: Send) -> None:
        if request.path == "/token" and request.method == "POST":
            await self._send_json(send, 200, self._token(request))
            return
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth[len("Bearer ") :] not in self.tokens:
            raise ApiError(
                401,
                "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                "login cookie or other valid authentication credential. See "
                "https://developers.google.com/identity/sign-in/web/devconsole-project.",
            )
        await self._scripted()
        match = re.match(r"^/v4/spreadsheets/([^/]+)(?:/values/(.+))?$", request.path)
        if not match or request.method != "GET":
            raise ApiError(404, "Requested entity was not found.")
        sheet_id, range_ = match.groups()
        if sheet_id not in self.spreadsheets:
            raise ApiError(404, "Requested entity was not found.")
        if sheet_id not in self.shared:
            raise ApiError(403, "The caller does not have permission")
        book = self.spreadsheets[sheet_id]
        if range_ is None:
            await self._send_json(
                send, 200, {"sheets": [{"properties": {"title": t}} for t in book]}
            )
            return
        await self._send_json(send, 200, self._values(book, range_))

    def _token(self, request: Recorded) -> dict[str, Any]:
        form = {k: v[0] for k, v in parse_qs(request.raw.decode()).items()}
        if form.get("grant_type") != GRANT:
            raise TokenError(
                "unsupported_grant_type", "Invalid grant_type: " + form.get("grant_type", "")
            )
        try:
            claims = jwt.decode(
                form.get("assertion", ""),
                self.public_key,
                algorithms=["RS256"],
                audience=self.token_uri,
                options={"require": ["iss", "aud", "exp", "iat"]},
            )
        except jwt.InvalidSignatureError:
            raise TokenError("invalid_grant", "Invalid JWT Signature.") from None
        except jwt.ExpiredSignatureError:
            raise TokenError(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                "reasonable timeframe. Check your iat and exp values in the JWT claim.",
            ) from None
        except jwt.InvalidAudienceError:
            raise TokenError("invalid_grant", "Invalid JWT: Failed audience check.") from None
        except jwt.PyJWTError as error:
            raise TokenError("invalid_grant", f"Invalid JWT: {error}") from None
        self.assertions.append(claims)
        if claims["iss"] != self.email:
            raise TokenError("invalid_grant", "Invalid grant: account not found")
        if claims.get("scope") != SCOPE:
            raise TokenError("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        if not 0 < claims["exp"] - claims["iat"] <= 3600 or claims["iat"] > time.time() + 300:
            raise TokenError(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                "reasonable timeframe. Check your iat and exp values in the JWT claim.",
            )
        token = "ya29." + secrets.token_urlsafe(32)
        self.tokens.add(token)
        return {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}

    def _values(self, book: dict[str, list[list[str]]], range_: str) -> dict[str, Any]:
        sheet, bang, cells = range_.rpartition("!")
        if not bang:
            sheet, cells = range_, ""
        if sheet.startswith("'") and sheet.endswith("'"):
            sheet = sheet[1:-1].replace("''", "'")
        if sheet not in book:
            if bang or not _CELLS.match(range_):
                raise ApiError(400, f"Unable to parse range: {range_}")
            sheet, cells = next(iter(book)), range_
        rows = book[sheet]
        match = _CELLS.match(cells)
        if match is None:
            raise ApiError(400, f"Unable to parse range: {range_}")
        c1, r1, c2, r2 = match.groups()
        top = int(r1) - 1 if r1 else 0
        bottom = int(r2) if r2 else (int(r1) if r1 and c2 is None else len(rows))
        left = _column(c1) if c1 else 0
        right = _column(c2) + 1 if c2 else (left + 1 if c1 and c2 is None else 10_000)
        values = [row[left:right] for row in rows[top:bottom]]
        values = [_trim(row) for row in values]
        while values and not values[-1]:
            values.pop()
        title = sheet if re.fullmatch(r"\w+", sheet) else "'" + sheet.replace("'", "''") + "'"
        return {
            "range": f"{title}!{cells or 'A1:Z1000'}",
            "majorDimension": "ROWS",
            "values": values,
        }

    def _failure(self, failure: Failure) -> WireError:
        error = ApiError(
            failure.status,
            "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per "
            "minute per user' of service 'sheets.googleapis.com'."
            if failure.status == 429
            else "The service is currently unavailable.",
        )
        error.headers = failure.headers
        return error


def _trim(row: list[str]) -> list[str]:
    row = list(row)
    while row and row[-1] == "":
        row.pop()
    return row
