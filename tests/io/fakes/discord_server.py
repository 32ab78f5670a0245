"""A fake Discord REST API on 127.0.0.1: editing an interaction's original response
(``PATCH /webhooks/<app>/<token>/messages/@original``), follow-up messages
(``POST /webhooks/<app>/<token>``) and registering a command
(``POST /applications/<app>/commands`` with ``Authorization: Bot <token>``) and a bot's
message in a channel (``POST /channels/<id>/messages``, ``channel_messages``), as Discord
answers them. Content over 2,000 characters is refused as Discord refuses it.
``edits``, ``followups`` and ``commands`` list what it took. Set DISCORD_API_BASE_URL
to its ``base_url``."""

from __future__ import annotations

import itertools
import re
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

CONTENT_LIMIT = 2000
_ORIGINAL = re.compile(r"^/webhooks/(\d+)/([^/]+)/messages/@original$")
_FOLLOWUP = re.compile(r"^/webhooks/(\d+)/([^/]+)$")
_COMMANDS = re.compile(r"^/applications/(\d+)/commands$")
_CHANNEL_MESSAGES = re.compile(r"^/channels/(\d+)/messages$")


class DiscordError(WireError):
    def __init__(self, status: int, code: int, message: str, retry_after: float | None = None):
        body: dict[str, Any] = {"code": code, "message": message}
        if retry_after is not None:
            body["retry_after"] = retry_after
        super().__init__(status, message, body, None)


class FakeDiscord(FakeServer):
    def __init__(self, bot_token: str) -> None:
        super().__init__(api_key=bot_token, reply="")
        self.edits: list[tuple[str, str, dict[str, Any]]] = []  # (application, token, body)
        self.followups: list[tuple[str, str, dict[str, Any]]] = []
        self.commands: list[dict[str, Any]] = []
        self.channel_messages: list[tuple[str, dict[str, Any]]] = []  # (channel, body)
        self._ids = itertools.count(9000)

    async def _answer(self, request: Recorded, send: Send) -> None:
        await self._scripted()
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "PATCH" and (match := _ORIGINAL.match(request.path)):
            self._check_content(body)
            self.edits.append((match[1], match[2], body))
            await self._send_json(send, 200, self._message(body))
        elif request.method == "POST" and (match := _FOLLOWUP.match(request.path)):
            self._check_content(body)
            self.followups.append((match[1], match[2], body))
            await self._send_json(send, 200, self._message(body))
        elif request.method == "POST" and _COMMANDS.match(request.path):
            if request.headers.get("authorization") != f"Bot {self.api_key}":
                raise DiscordError(401, 0, "401: Unauthorized")
            self.commands.append(body)
            await self._send_json(send, 201, {"id": str(next(self._ids)), **body})
        elif request.method == "POST" and (match := _CHANNEL_MESSAGES.match(request.path)):
            if request.headers.get("authorization") != f"Bot {self.api_key}":
                raise DiscordError(401, 0, "401: Unauthorized")
            self._check_content(body)
            self.channel_messages.append((match[1], body))
            await self._send_json(send, 200, self._message(body))
        else:
            raise DiscordError(404, 0, "404: Not Found")

    def _check_content(self, body: dict[str, Any]) -> None:
        content = body.get("content")
        if not isinstance(content, str) or len(content) > CONTENT_LIMIT:
            raise DiscordError(400, 50035, "Invalid Form Body")

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"id": str(next(self._ids)), "type": 20, "content": body["content"]}

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 429:
            return DiscordError(429, 0, "You are being rate limited.", retry_after=0.01)
        return DiscordError(failure.status, 0, "Internal Server Error")
