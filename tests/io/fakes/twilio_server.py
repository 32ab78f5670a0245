"""A fake of the telephony provider's REST API on 127.0.0.1, with HTTP basic auth (account
SID and auth token) and form bodies, answered with the provider's resources or its error
body (``{"code", "message", "more_info", "status"}``). Set TELCO_API_BASE_URL to its
``base_url``.

- Messages API: ``POST /2010-04-01/Accounts/<sid>/Messages.json``, 201 with a message
  resource; ``messages`` lists the forms it took.
- Calls API, updating a call in progress: ``POST /2010-04-01/Accounts/<sid>/Calls/<CallSid>.json``
  with ``Twiml`` (markup, which must parse) or ``Url``, 200 with the call resource. The
  call must be one a test placed on it (``place(phone_call)``) and still in progress
  (else 404 / 400 21220, as the provider answers). New markup replaces the call's
  ``<Connect><Stream>``: once it has answered, the fake ends the call's media stream as
  the provider does (``stop``, then the socket closed). ``call_updates`` lists
  ``(CallSid, form)`` in the order taken."""

from __future__ import annotations

import base64
import itertools
import re
import xml.etree.ElementTree as ElementTree
from typing import Any
from urllib.parse import parse_qsl, unquote

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

BODY_LIMIT = 1600
_CALL_PATH = re.compile(r"/2010-04-01/Accounts/(?P<account>[^/]+)/Calls/(?P<call>[^/]+)\.json")


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
        self.call_updates: list[tuple[str, dict[str, str]]] = []
        self._calls: dict[str, Any] = {}  # CallSid -> the phone call (tests.io.fakes.phone)
        self._ids = itertools.count(1)

    def place(self, phone_call: Any) -> Any:
        """Put ``phone_call`` (a ``tests.io.fakes.phone.PhoneCall``) on this provider, so
        that its ``callSid`` can be updated; returns it."""
        self._calls[phone_call.call_sid] = phone_call
        return phone_call

    async def _answer(self, request: Recorded, send: Send) -> None:
        expected = base64.b64encode(f"{self.account_sid}:{self.api_key}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            raise TelcoError(401, 20003, "Authenticate")
        await self._scripted()
        form = dict(parse_qsl(request.raw.decode(), keep_blank_values=True))
        updating = _CALL_PATH.fullmatch(request.path)
        if updating is not None and unquote(updating["account"]) == self.account_sid:
            await self._update_call(unquote(updating["call"]), form, send)
            return
        if request.path != f"/2010-04-01/Accounts/{self.account_sid}/Messages.json":
            raise TelcoError(404, 20404, "The requested resource was not found")
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

    async def _update_call(self, call_sid: str, form: dict[str, str], send: Send) -> None:
        phone_call = self._calls.get(call_sid)
        if phone_call is None:
            raise TelcoError(404, 20404, "The requested resource was not found")
        if phone_call.ended.is_set():
            raise TelcoError(400, 21220, "Call is not in-progress. Cannot redirect.")
        markup = form.get("Twiml")
        if markup is None and not form.get("Url"):
            raise TelcoError(400, 21205, "Url or Twiml is required to update a call.")
        if markup is not None:
            try:
                root = ElementTree.fromstring(markup)  # noqa: S314 (the service under test)
            except ElementTree.ParseError as error:
                raise TelcoError(400, 12100, f"Document parse failure: {error}") from None
            if root.tag != "Response":
                raise TelcoError(400, 12100, "Document parse failure: no <Response>")
        self.call_updates.append((call_sid, form))
        await self._send_json(
            send,
            200,
            {
                "sid": call_sid,
                "account_sid": self.account_sid,
                "status": "in-progress",
                "direction": "inbound",
                "from": phone_call.caller,
                "api_version": "2010-04-01",
            },
        )
        # the new markup replaces <Connect><Stream>: the provider stops the stream
        await phone_call.hang_up()

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
