"""A fake Telegram Bot API on 127.0.0.1: ``POST /bot<token>/sendMessage`` and
``/setWebhook`` as the real API answers them (``{"ok": true, "result": …}``, or
``{"ok": false, "error_code", "description"}``), checking the token and the text limit.
Records every request; ``sent`` lists the messages it took, ``webhooks`` the
registrations. Serve it with ``serve_fake`` and set TELEGRAM_API_BASE_URL to its
``base_url``."""

from __future__ import annotations

import itertools
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

TEXT_LIMIT = 4096  # UTF-16 units, after entity parsing


class BotApiError(WireError):
    def __init__(self, status: int, description: str, retry_after: int | None = None):
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        super().__init__(status, description, body, None)


class FakeTelegram(FakeServer):
    def __init__(self, token: str) -> None:
        super().__init__(api_key=token, reply="")
        self.sent: list[dict[str, Any]] = []
        self.webhooks: list[dict[str, Any]] = []
        self._ids = itertools.count(1000)

    async def _answer(self, request: Recorded, send: Send) -> None:
        prefix = f"/bot{self.api_key}/"
        if not request.path.startswith(prefix):
            raise BotApiError(401, "Unauthorized")
        await self._scripted()
        method = request.path[len(prefix) :]
        body = request.body if isinstance(request.body, dict) else {}
        if method == "sendMessage":
            await self._send_json(send, 200, {"ok": True, "result": self._send_message(body)})
        elif method == "setWebhook":
            if not isinstance(body.get("url"), str):
                raise BotApiError(400, "Bad Request: bad webhook: URL must be provided")
            self.webhooks.append(body)
            await self._send_json(
                send, 200, {"ok": True, "result": True, "description": "Webhook was set"}
            )
        else:
            raise BotApiError(404, "Not Found")

    def _send_message(self, body: dict[str, Any]) -> dict[str, Any]:
        text = body.get("text")
        if "chat_id" not in body:
            raise BotApiError(400, "Bad Request: chat_id is empty")
        if not isinstance(text, str) or not text.strip():
            raise BotApiError(400, "Bad Request: message text is empty")
        if len(text.encode("utf-16-le")) // 2 > TEXT_LIMIT:
            raise BotApiError(400, "Bad Request: message is too long")
        self.sent.append(body)
        return {
            "message_id": next(self._ids),
            "date": 1_700_000_000,
            "chat": {"id": body["chat_id"], "type": "private"},
            "text": text,
        }

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 429:
            return BotApiError(429, "Too Many Requests: retry after 0", retry_after=0)
        return BotApiError(failure.status, "Internal Server Error")
