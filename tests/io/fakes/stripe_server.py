"""A fake Stripe API on 127.0.0.1: ``GET /v1/customers`` with the secret key as a Bearer
token (or HTTP Basic user, as Stripe also takes), ``limit`` 1-100 and ``starting_after``,
answering list objects (``{"object": "list", "data", "has_more", "url"}``) and Stripe's
error bodies (``{"error": {"type", "message", "code", "param"}}``), whose messages name a
key only by its last four characters. ``revoked`` keys answer as Stripe answers an
expired (rolled) key.

The Search API too, ``GET /v1/customers/search?query=…&limit=…``, answering a search
result (``{"object": "search_result", "data", "has_more", "next_page", "url"}``). Its
query language is served for one clause, ``field:'value'`` (or ``"value"``) on email,
name, phone or ``metadata['key']``, a backslash escaping the next character in the
value, as Stripe documents; anything else is Stripe's 400 for a query it cannot parse."""

from __future__ import annotations

import base64
import re
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError


class StripeError(WireError):
    def __init__(self, status: int, type_: str, message: str, **extra: Any):
        super().__init__(
            status, message, {"error": {"type": type_, "message": message, **extra}}, None
        )


SEARCH_FIELDS = ("email", "name", "phone")
_CLAUSE = re.compile(
    r"""^(?P<field>[a-z_]+|metadata\['(?P<key>[^'\\]+)'\]):"""
    r"""(?P<quote>['"])(?P<value>(?:\\.|(?!(?P=quote))[^\\])*)(?P=quote)$"""
)


def redacted(key: str) -> str:
    prefix = key[: key.index("_", 3) + 1] if key.count("_") >= 2 else ""
    return f"{prefix}****{key[-4:]}"


def customer(n: int) -> dict[str, Any]:
    return {
        "id": f"cus_{n:014d}",
        "object": "customer",
        "created": 1_760_000_000 + n,
        "email": f"customer{n}@example.org",
        "name": f"Customer {n}",
        "livemode": False,
        "metadata": {},
    }


class FakeStripe(FakeServer):
    def __init__(self, key: str, customers: int = 0) -> None:
        super().__init__(api_key=key, reply="")
        self.customers = [customer(n) for n in range(customers)]
        self.revoked: set[str] = set()

    def _key(self, request: Recorded) -> str | None:
        auth = request.headers.get("authorization", "")
        if auth.startswith("Bearer "):
            return auth[len("Bearer ") :]
        if auth.startswith("Basic "):
            return base64.b64decode(auth[len("Basic ") :]).decode().partition(":")[0]
        return None

    async def _answer(self, request: Recorded, send: Send) -> None:
        key = self._key(request)
        if not key:
            raise StripeError(
                401,
                "invalid_request_error",
                "You did not provide an API key. You need to provide your API key in the "
                "Authorization header, using Bearer auth (e.g. 'Authorization: Bearer "
                "YOUR_SECRET_KEY').",
            )
        if key in self.revoked:
            raise StripeError(
                401, "invalid_request_error", f"Expired API Key provided: {redacted(key)}"
            )
        if key != self.api_key:
            raise StripeError(
                401, "invalid_request_error", f"Invalid API Key provided: {redacted(key)}"
            )
        await self._scripted()
        if request.method == "GET" and request.path == "/v1/customers/search":
            await self._search(request, send)
            return
        if request.method != "GET" or request.path != "/v1/customers":
            raise StripeError(
                404,
                "invalid_request_error",
                f"Unrecognized request URL ({request.method}: {request.path}).",
            )
        raw_limit = request.query.get("limit", ["10"])[0]
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= 100:
            raise StripeError(
                400,
                "invalid_request_error",
                f"This value must be less than or equal to 100 (it currently is '{raw_limit}').",
                param="limit",
            )
        limit = int(raw_limit)
        start = 0
        if "starting_after" in request.query:
            after = request.query["starting_after"][0]
            ids = [c["id"] for c in self.customers]
            if after not in ids:
                raise StripeError(
                    400,
                    "invalid_request_error",
                    f"No such customer: '{after}'",
                    code="resource_missing",
                    param="starting_after",
                )
            start = ids.index(after) + 1
        data = self.customers[start : start + limit]
        await self._send_json(
            send,
            200,
            {
                "object": "list",
                "data": data,
                "has_more": start + limit < len(self.customers),
                "url": "/v1/customers",
            },
            {"request-id": f"req_{len(self.requests):014d}"},
        )

    async def _search(self, request: Recorded, send: Send) -> None:
        query = request.query.get("query", [""])[0]
        clause = _CLAUSE.match(query.strip())
        if clause is None:
            raise StripeError(
                400,
                "invalid_request_error",
                f"We were unable to parse your search query. Try using the format "
                f'`metadata["key"]:"value"` to query for metadata or '
                f'`key:"value"` to query for other fields. ({query[:80]})',
                param="query",
            )
        field, key = clause["field"], clause["key"]
        if key is None and field not in SEARCH_FIELDS:
            raise StripeError(
                400,
                "invalid_request_error",
                f"Field `{field}` is an unsupported search field for resource `customers`.",
                param="query",
            )
        value = re.sub(r"\\(.)", r"\1", clause["value"])
        limit = int(request.query.get("limit", ["10"])[0])

        def holds(row: dict[str, Any]) -> bool:
            have = row["metadata"].get(key) if key is not None else row.get(field)
            return have is not None and str(have).lower() == value.lower()

        found = [row for row in self.customers if holds(row)]
        await self._send_json(
            send,
            200,
            {
                "object": "search_result",
                "data": found[:limit],
                "has_more": len(found) > limit,
                "next_page": None,
                "url": "/v1/customers/search",
            },
        )

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 429:
            error = StripeError(
                429,
                "invalid_request_error",
                "Too many requests hit the API too quickly. We recommend an exponential "
                "backoff of your requests.",
                code="rate_limit",
            )
        else:
            error = StripeError(
                failure.status, "api_error", "Something went wrong on Stripe's end."
            )
        error.headers = failure.headers
        return error
