"""A fake of the telephony provider's Messages API on 127.0.0.1:
``POST /2010-04-01/Accounts/<sid>/Messages.json`` with HTTP basic auth (account SID and
auth token) and a form body, answered 201 with a message resource, or the provider's
error body (``{"code", "message", "more_info", "status"}``). ``messages`` lists the
forms it took. Set TELCO_API_BASE_URL to its ``base_url``."""

from __future__ import annotations

import base64
import itertools
from typing import Any
from urllib.parse import parse_qsl

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

BODY_LIMIT = 1600


class TelcoError(WireError):
    def __init__(self, status: int, code: int, message: str):
        body = {
            "code": code,
            "message": message,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        }
        super().__init__(status, message, body, None)


class FakeTelco(FakeServer):
    def __init__(self, account_sid: str, auth_token: str) -> None:
        super().__init__(api_key=auth_token, reply="")
        self.account_sid = account_sid
        self.messages: list[dict[str, str]] = []
        self._ids = itertools.count(1)

    async def _answer(self, request: Recorded, send: Send) -> None:
        expected = base64.b64encode(f"{self.account_sid}:{self.api_key}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            raise TelcoError(401, 20003, "Authenticate")
        await self._scripted()
        if request.path != f"/2010-04-01/Accounts/{self.account_sid}/Messages.json":
            raise TelcoError(404, 20404, "The requested resource was not found")
        form = dict(parse_qsl(request.raw.decode(), keep_blank_values=True))
        for name in ("To", "From"):
            if not form.get(name):
                raise TelcoError(400, 21604, f"A '{name}' phone number is required.")
        if len(form.get("Body", "")) > BODY_LIMIT:
            raise TelcoError(
                400, 21617, "The concatenated message body exceeds the 1600 character limit."
            )
        self.messages.append(form)
        sid = f"SM{next(self._ids):032x}"
        await self._send_json(send, 201, self._resource(sid, form))

    def _resource(self, sid: str, form: dict[str, str]) -> dict[str, Any]:
        return {
            "sid": sid,
            "account_sid": self.account_sid,
            "to": form["To"],
            "from": form["From"],
            "body": form.get("Body", ""),
            "status": "queued",
            "num_segments": "1",
            "direction": "outbound-api",
            "api_version": "2010-04-01",
        }

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 429:
            return TelcoError(429, 20429, "Too Many Requests")
        return TelcoError(failure.status, 20500, "Internal Server Error")
