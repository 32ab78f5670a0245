"""A fake Stripe API on 127.0.0.1: ``GET /v1/customers`` with the secret key as a Bearer
token (or HTTP Basic user, as Stripe also takes), ``limit`` 1-100 and ``starting_after``,
answering list objects (``{"object": "list", "data", "has_more", "url"}``) and Stripe's
error bodies (``{"error": {"type", "message", "code", "param"}}``), whose messages name a
key only by its last four characters. ``revoked`` keys answer as Stripe answers an
expired (rolled) key."""

from __future__ import annotations

import base64
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError


class StripeError(WireError):
    def __init__(self, status: int, type_: str, message: str, **extra: Any):
        super().__init__(
            status, message, {"error": {"type": type_, "message": message, **extra}}, None
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
