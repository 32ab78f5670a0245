"""A workflow's webhook receiver (an n8n- or Zapier-style catch hook) on 127.0.0.1: records
every call, answers 200 ``{"ok": true}``, or what ``fail_next`` scripts (a status and a
Retry-After), or hangs for ``delay`` seconds. Serve it with the ``serve_fake`` fixture and
point a workflow at ``receiver.url("/hook/1")``."""

from __future__ import annotations

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError


class WorkflowReceiver(FakeServer):
    def __init__(self) -> None:
        super().__init__(api_key="", reply="")

    def url(self, path: str = "/hook") -> str:
        return self.base_url + path

    async def _answer(self, request: Recorded, send: Send) -> None:
        await self._scripted()
        await self._send_json(send, 200, {"ok": True})

    def _failure(self, failure: Failure) -> WireError:
        body = {"error": f"scripted {failure.status}"}
        return WireError(failure.status, body["error"], body, failure.headers)
