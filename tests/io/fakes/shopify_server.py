"""A fake Shopify GraphQL Admin API on 127.0.0.1:
``POST /admin/api/{version}/graphql.json`` with ``X-Shopify-Access-Token``, answering the
``customers``/``orders`` connections (``first`` at most 250, ``after`` an opaque cursor)
as ``{"data": {…: {"nodes", "pageInfo": {"hasNextPage", "endCursor"}}}, "extensions":
{"cost": …}}``; a wrong token gets Shopify's 401 ``{"errors": "[API] Invalid API key or
access token …"}``; ``throttle_next`` answers with the ``THROTTLED`` GraphQL error on a
200, as the leaky bucket does. It reads which connection is asked for and its variables,
not the whole GraphQL grammar.

A connection's ``query`` argument (Shopify's search syntax, passed as a variable) is
served for one term, ``field:"value"`` (a backslash escaping the next character) or
``field:value``, compared without case; any other search matches nothing here."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

VERSIONS = ("2025-01", "2025-04", "2025-07", "2025-10", "unstable")
BAD_TOKEN = "[API] Invalid API key or access token (unrecognized login or wrong password)"


_TERM = re.compile(r'^(\w+):(?:"((?:\\.|[^"\\])*)"|([^\s"():\\]+))$')


def _matches(search: str) -> Any:
    term = _TERM.match(search.strip())
    if term is None:
        return lambda node: False
    field = term.group(1)
    value = re.sub(r"\\(.)", r"\1", term.group(2)) if term.group(3) is None else term.group(3)
    return lambda node: str(node.get(field) or "").lower() == value.lower()


class ShopifyError(WireError):
    def __init__(self, status: int, errors: Any):
        super().__init__(status, str(errors), {"errors": errors}, None)


def customer(n: int) -> dict[str, Any]:
    return {
        "id": f"gid://shopify/Customer/{700 + n}",
        "email": f"buyer{n}@example.org",
        "firstName": f"Buyer{n}",
        "lastName": "Example",
        "phone": None,
        "tags": [],
        "numberOfOrders": str(n % 3),
        "createdAt": "2026-03-01T12:00:00Z",
        "updatedAt": "2026-03-02T12:00:00Z",
    }


def order(n: int) -> dict[str, Any]:
    return {
        "id": f"gid://shopify/Order/{900 + n}",
        "name": f"#{1000 + n}",
        "email": f"buyer{n}@example.org",
        "createdAt": "2026-03-01T12:00:00Z",
        "displayFinancialStatus": "PAID",
        "totalPriceSet": {"shopMoney": {"amount": f"{10 + n}.00", "currencyCode": "EUR"}},
    }


class FakeShopify(FakeServer):
    def __init__(self, token: str, customers: int = 0, orders: int = 0) -> None:
        super().__init__(api_key=token, reply="")
        self.resources = {
            "customers": [customer(n) for n in range(customers)],
            "orders": [order(n) for n in range(orders)],
        }
        self._throttled = 0

    def throttle_next(self, times: int = 1) -> None:
        self._throttled += times

    def _cost(self, requested: int, available: float) -> dict[str, Any]:
        return {
            "cost": {
                "requestedQueryCost": requested,
                "actualQueryCost": None if available < requested else requested,
                "throttleStatus": {
                    "maximumAvailable": 2000.0,
                    "currentlyAvailable": available,
                    "restoreRate": 1000.0,
                },
            }
        }

    async def _answer(self, request: Recorded, send: Send) -> None:
        match = re.match(r"^/admin/api/([\w-]+)/graphql\.json$", request.path)
        if request.headers.get("x-shopify-access-token") != self.api_key:
            raise ShopifyError(401, BAD_TOKEN)
        if not match or match.group(1) not in VERSIONS or request.method != "POST":
            raise ShopifyError(404, "Not Found")
        await self._scripted()
        body = request.body if isinstance(request.body, dict) else {}
        query, variables = body.get("query"), body.get("variables") or {}
        if not isinstance(query, str):
            raise ShopifyError(400, {"query": "Required parameter missing or invalid"})
        connection = re.search(r"\{\s*(\w+)\s*\(", query)
        name = connection.group(1) if connection else None
        if name not in self.resources:
            await self._send_json(
                send,
                200,
                {"errors": [{"message": f"Field '{name}' doesn't exist on type 'QueryRoot'"}]},
            )
            return
        first = variables.get("first")
        requested = 2 + (first or 0)
        if self._throttled:
            self._throttled -= 1
            await self._send_json(
                send,
                200,
                {
                    "errors": [
                        {
                            "message": "Throttled",
                            "extensions": {
                                "code": "THROTTLED",
                                "documentation": "https://shopify.dev/api/usage/rate-limits",
                            },
                        }
                    ],
                    "extensions": self._cost(requested, 2.0),
                },
            )
            return
        if not isinstance(first, int) or not 1 <= first <= 250:
            await self._send_json(
                send,
                200,
                {"errors": [{"message": "The first argument must be between 1 and 250."}]},
            )
            return
        after = variables.get("after")
        start = json.loads(base64.b64decode(after))["last"] if after else 0
        rows = self.resources[name]
        if isinstance(variables.get("query"), str):
            rows = [row for row in rows if _matches(variables["query"])(row)]
        page = rows[start : start + first]
        end = start + len(page)
        cursor = base64.b64encode(json.dumps({"last": end}).encode()).decode()
        data = {
            name: {
                "nodes": page,
                "pageInfo": {"hasNextPage": end < len(rows), "endCursor": cursor if page else None},
            }
        }
        await self._send_json(
            send, 200, {"data": data, "extensions": self._cost(requested, 1990.0)}
        )

    def _failure(self, failure: Failure) -> WireError:
        error = ShopifyError(
            failure.status,
            "Exceeded 2 calls per second for api client. Reduce request rates to resume "
            "uninterrupted service."
            if failure.status == 429
            else "Internal Server Error",
        )
        error.headers = failure.headers
        return error
