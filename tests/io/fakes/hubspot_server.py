"""A fake HubSpot CRM v3 API on 127.0.0.1: ``GET /crm/v3/objects/{object_type}`` with a
private app's Bearer token, ``limit`` (at most 100) and the opaque ``after`` cursor,
answering ``{"results": [...], "paging": {"next": {"after", "link"}}}`` and HubSpot's
error bodies (``{"status": "error", "message", "correlationId", "category"}``).
``objects`` holds the records by object type; ``revoked`` tokens are refused as HubSpot
refuses any token it does not know.

The CRM search, ``POST /crm/v3/objects/{object_type}/search`` with a JSON body of
``filterGroups`` (OR of groups, each an AND of ``filters``: ``propertyName``,
``operator``, ``value``), ``limit`` (at most 200) and ``after``, answering
``{"total", "results", "paging"}``; the operators EQ and NEQ are served (string values
compared without case, as HubSpot compares them), any other is a VALIDATION_ERROR."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

NO_CREDENTIALS = (
    "Authentication credentials not found. This API supports OAuth 2.0 authentication and "
    "you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview"
)


class HubSpotError(WireError):
    def __init__(self, status: int, message: str, category: str, **extra: Any):
        body = {
            "status": "error",
            "message": message,
            "correlationId": str(uuid.uuid4()),
            "category": category,
            **extra,
        }
        super().__init__(status, message, body, None)


def contact(n: int) -> dict[str, Any]:
    """A contact as HubSpot lists one."""
    return {
        "id": str(1000 + n),
        "properties": {
            "createdate": "2026-01-05T10:00:00.000Z",
            "email": f"contact{n}@example.org",
            "firstname": f"First{n}",
            "hs_object_id": str(1000 + n),
            "lastmodifieddate": "2026-02-01T10:00:00.000Z",
            "lastname": f"Last{n}",
        },
        "createdAt": "2026-01-05T10:00:00.000Z",
        "updatedAt": "2026-02-01T10:00:00.000Z",
        "archived": False,
    }


class FakeHubSpot(FakeServer):
    def __init__(self, token: str, contacts: int = 0) -> None:
        super().__init__(api_key=token, reply="")
        self.objects: dict[str, list[dict[str, Any]]] = {
            "contacts": [contact(n) for n in range(contacts)],
            "companies": [],
            "deals": [],
        }
        self.revoked: set[str] = set()
        self.next_link_base: str | None = None  # paging.next.link's origin, default its own

    async def _answer(self, request: Recorded, send: Send) -> None:
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        if token != self.api_key or token in self.revoked:
            raise HubSpotError(401, NO_CREDENTIALS, "INVALID_AUTHENTICATION")
        await self._scripted()
        prefix = "/crm/v3/objects/"
        if request.method == "POST" and request.path.startswith(prefix):
            await self._search(request, request.path[len(prefix) :].removesuffix("/search"), send)
            return
        if request.method != "GET" or not request.path.startswith(prefix):
            raise HubSpotError(404, "Not Found", "OBJECT_NOT_FOUND")
        kind = request.path[len(prefix) :]
        if kind not in self.objects:
            raise HubSpotError(400, f"Unable to infer object type from: {kind}", "VALIDATION_ERROR")
        limit = int(request.query.get("limit", ["10"])[0])
        if not 1 <= limit <= 100:
            raise HubSpotError(400, "limit must be between 1 and 100", "VALIDATION_ERROR")
        after = request.query.get("after", [None])[0]
        start = int(base64.urlsafe_b64decode(after).decode()) if after else 0
        rows = self.objects[kind]
        body: dict[str, Any] = {"results": rows[start : start + limit]}
        if start + limit < len(rows):
            cursor = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            origin = self.next_link_base or self.base_url
            body["paging"] = {
                "next": {
                    "after": cursor,
                    "link": f"{origin}{request.path}?limit={limit}&after={cursor}",
                }
            }
        await self._send_json(send, 200, body)

    async def _search(self, request: Recorded, kind: str, send: Send) -> None:
        if not request.path.endswith("/search") or kind not in self.objects:
            raise HubSpotError(404, "Not Found", "OBJECT_NOT_FOUND")
        body = request.body
        if not isinstance(body, dict):
            raise HubSpotError(400, "Invalid input JSON on line 1", "VALIDATION_ERROR")
        groups = body.get("filterGroups") or []
        limit = body.get("limit", 10)
        if not isinstance(limit, int) or not 1 <= limit <= 200:
            raise HubSpotError(400, "limit must be between 1 and 200", "VALIDATION_ERROR")
        if not isinstance(groups, list) or len(groups) > 5:
            raise HubSpotError(400, "Up to 5 filterGroups are allowed", "VALIDATION_ERROR")
        rows = [row for row in self.objects[kind] if not groups or any(
            all(self._holds(row, rule) for rule in group.get("filters") or [])
            for group in groups
        )]  # fmt: skip
        start = int(body.get("after") or 0)
        page: dict[str, Any] = {"total": len(rows), "results": rows[start : start + limit]}
        if start + limit < len(rows):
            page["paging"] = {"next": {"after": str(start + limit)}}
        await self._send_json(send, 200, page)

    @staticmethod
    def _holds(row: dict[str, Any], rule: Any) -> bool:
        if not isinstance(rule, dict) or not isinstance(rule.get("propertyName"), str):
            raise HubSpotError(400, "filter propertyName is required", "VALIDATION_ERROR")
        operator = rule.get("operator")
        if operator not in ("EQ", "NEQ"):
            raise HubSpotError(
                400, f"Invalid operator {operator!r} (served here: EQ, NEQ)", "VALIDATION_ERROR"
            )
        have = row["properties"].get(rule["propertyName"])
        same = have is not None and str(have).lower() == str(rule.get("value", "")).lower()
        return same if operator == "EQ" else not same

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 429:
            error = HubSpotError(
                429,
                "You have reached your secondly limit.",
                "RATE_LIMITS",
                errorType="RATE_LIMIT",
                policyName="SECONDLY",
            )
            error.headers = failure.headers
            return error
        error = HubSpotError(failure.status, "internal error", "INTERNAL_ERROR")
        error.headers = failure.headers
        return error
