"""A fake Salesforce on 127.0.0.1: the OAuth 2.0 token endpoint
(``POST /services/oauth2/token``, client credentials or username-password with the
security token appended to the password) and the REST query resource
(``GET /services/data/vNN.N/query?q=SELECT … FROM …`` and its ``nextRecordsUrl``
locators), in Salesforce's shapes: ``{"totalSize", "done", "nextRecordsUrl", "records"}``
with each record's ``attributes``, token errors ``{"error", "error_description"}`` and
REST errors ``[{"message", "errorCode"}]``. ``batch`` is the page size (Salesforce's is
2,000); ``instance_url`` and ``next_origin`` let a test make it name other hosts.

SOQL is served for ``SELECT <fields> FROM <object> [WHERE <field> = '<literal>']
[LIMIT n]``: the literal in single quotes with SOQL's backslash escapes (``\'``,
``\"``, ``\\``, ``\n``, ``\r``, ``\t``, ``\b``, ``\f``), compared without case as
Salesforce compares text; an unescaped quote or an unknown escape is MALFORMED_QUERY."""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import parse_qs

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

_SELECT = re.compile(
    r"^SELECT\s+(.+?)\s+FROM\s+(\w+)"
    r"(?:\s+WHERE\s+(\w+)\s*=\s*'((?:\\.|[^'\\])*)')?(?:\s+LIMIT\s+(\d+))?$",
    re.IGNORECASE | re.DOTALL,
)
_UNESCAPE = {"'": "'", '"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def _literal(text: str) -> str | None:
    """A SOQL string literal's value (its quotes gone); None for an unknown escape."""
    out, at = [], 0
    while at < len(text):
        if text[at] == "\\":
            char = _UNESCAPE.get(text[at + 1 : at + 2])
            if char is None:
                return None
            out.append(char)
            at += 2
        else:
            out.append(text[at])
            at += 1
    return "".join(out)


class TokenError(WireError):
    def __init__(self, error: str, description: str, status: int = 400):
        body = {"error": error, "error_description": description}
        super().__init__(status, description, body, None)


class RestError(WireError):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(status, message, [{"message": message, "errorCode": code}], None)  # type: ignore[arg-type]


def contact(n: int) -> dict[str, Any]:
    return {
        "Id": f"003{n:015d}",
        "Name": f"Contact {n}",
        "Email": f"contact{n}@example.org",
        "Phone": f"+1555000{n:04d}",
    }


class FakeSalesforce(FakeServer):
    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        username: str | None = None,
        password: str | None = None,
        security_token: str | None = None,
        contacts: int = 0,
        batch: int = 2000,
    ) -> None:
        super().__init__(api_key=client_secret, reply="")
        self.client_id = client_id
        self.client_secret = client_secret
        self.username, self.password, self.security_token = username, password, security_token
        self.objects: dict[str, list[dict[str, Any]]] = {
            "Contact": [contact(n) for n in range(contacts)],
            "Account": [],
        }
        self.batch = batch
        self.tokens: set[str] = set()
        self.instance_url: str | None = None  # what the token answer names; default its own
        self.next_origin: str | None = None  # nextRecordsUrl absolute on this origin
        self.grants: list[str] = []
        self._cursors: dict[str, tuple[list[dict[str, Any]], str]] = {}

    async def _answer(self, request: Recorded, send: Send) -> None:
        if request.path == "/services/oauth2/token" and request.method == "POST":
            await self._send_json(send, 200, self._token(request))
            return
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth[len("Bearer ") :] not in self.tokens:
            raise RestError(401, "INVALID_SESSION_ID", "Session expired or invalid")
        await self._scripted()
        match = re.match(r"^/services/data/v(\d+\.\d)/query(?:/([\w-]+))?/?$", request.path)
        if not match or request.method != "GET":
            raise RestError(404, "NOT_FOUND", "The requested resource does not exist")
        version, locator = match.groups()
        if locator:
            await self._send_json(send, 200, self._more(version, locator))
        else:
            await self._send_json(send, 200, self._query(version, request))

    def _token(self, request: Recorded) -> dict[str, Any]:
        form = {k: v[0] for k, v in parse_qs(request.raw.decode()).items()}
        grant = form.get("grant_type")
        self.grants.append(grant or "")
        if (
            form.get("client_id") != self.client_id
            or form.get("client_secret") != self.client_secret
        ):
            raise TokenError("invalid_client", "invalid client credentials")
        if grant == "password":
            expected = (self.password or "") + (self.security_token or "")
            if (
                self.username is None
                or form.get("username") != self.username
                or form.get("password") != expected
            ):
                raise TokenError("invalid_grant", "authentication failure")
        elif grant != "client_credentials":
            raise TokenError("unsupported_grant_type", "grant type not supported")
        token = "00D" + secrets.token_hex(8) + "!" + secrets.token_urlsafe(24)
        self.tokens.add(token)
        instance = self.instance_url or self.base_url
        return {
            "access_token": token,
            "instance_url": instance,
            "id": f"{instance}/id/00D000000000001/005000000000001",
            "token_type": "Bearer",
            "issued_at": "1763950000000",
            "signature": "c2lnbmF0dXJl",
        }

    def _query(self, version: str, request: Recorded) -> dict[str, Any]:
        q = request.query.get("q", [""])[0].strip()
        match = _SELECT.match(q)
        if not match:
            raise RestError(400, "MALFORMED_QUERY", f"unexpected token: '{q[:40]}'")
        fields = [f.strip() for f in match.group(1).split(",")]
        sobject, where, literal, limit = match.group(2, 3, 4, 5)
        wanted = _literal(literal) if literal is not None else None
        if literal is not None and wanted is None:
            raise RestError(400, "MALFORMED_QUERY", "Invalid string literal: illegal escape")
        if sobject not in self.objects:
            raise RestError(
                400,
                "INVALID_TYPE",
                f"sObject type '{sobject}' is not supported. If you are attempting to use a "
                "custom object, be sure to append the '__c' after the entity name.",
            )
        known = set(contact(0))
        for field in fields + ([where] if where else []):
            if field not in known:
                raise RestError(
                    400, "INVALID_FIELD", f"No such column '{field}' on entity '{sobject}'."
                )
        rows = [
            {
                "attributes": {
                    "type": sobject,
                    "url": f"/services/data/v{version}/sobjects/{sobject}/{row['Id']}",
                },
                **{f: row.get(f) for f in fields},
            }
            for row in self.objects[sobject]
            if wanted is None or str(row.get(where, "")).lower() == wanted.lower()
        ]
        if limit is not None:
            rows = rows[: int(limit)]
        locator = "01g" + secrets.token_hex(6)
        self._cursors[locator] = (rows, version)
        return self._batch(locator, 0)

    def _more(self, version: str, locator: str) -> dict[str, Any]:
        key, _, offset = locator.rpartition("-")
        if key not in self._cursors or not offset.isdigit():
            raise RestError(400, "INVALID_QUERY_LOCATOR", "invalid query locator")
        return self._batch(key, int(offset))

    def _batch(self, locator: str, offset: int) -> dict[str, Any]:
        rows, version = self._cursors[locator]
        end = offset + self.batch
        body: dict[str, Any] = {"totalSize": len(rows), "done": end >= len(rows)}
        if end < len(rows):
            path = f"/services/data/v{version}/query/{locator}-{end}"
            body["nextRecordsUrl"] = (self.next_origin or "") + path
        body["records"] = rows[offset:end]
        return body

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 503:
            error: WireError = RestError(503, "SERVER_UNAVAILABLE", "Server unavailable")
        else:
            error = RestError(
                failure.status, "REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded."
            )
        error.headers = failure.headers
        return error
