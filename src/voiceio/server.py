"""The voice server: a raw WebSocket server (not an HTTP route) on VOICE_BIND:VOICE_PORT,
where the telephony provider opens one media stream per call.

An upgrade is checked before anything is accepted: its signature (``ragcore.voice.upgrade``;
VOICE_ALLOW_UNSIGNED lets an unsigned one in for local testing, with a warning each
time), then room for one more call (VOICE_MAX_CALLS: more would make every call's audio
stutter on a small machine; the provider plays its fallback to the extra caller).

The same port answers ``GET /metrics`` (plain HTTP, not an upgrade), as the API does, so a
scraper can read a process that runs the voice server alone (``ragchat voice``): behind
SERVICE_API_KEY (``X-API-Key`` or ``Authorization: Bearer``) unless METRICS_PUBLIC. A
connection's request head is read first; anything but ``/metrics`` is handed to the
WebSocket server as it came.

When the service stops (``service.stopping``, on SIGTERM), a new stream is refused (503)
and each call in progress is closed politely (``voiceio.call``): ``serve_voice`` returns
as soon as none is left, and whatever remains at the end of SHUTDOWN_GRACE_SECONDS is
cancelled by its caller.
"""

from __future__ import annotations

import hmac
import json
import logging
from contextlib import suppress
from typing import Any

import trio
from trio_websocket import WebSocketRequest, WebSocketServer

from ragcore.channels.telco import SIGNATURE_HEADERS
from ragcore.settings import is_loopback
from ragcore.voice.upgrade import check_upgrade, signed_urls
from ragio import metrics
from ragio.db.pool import WORK_ON_LOOP
from ragio.service import Service
from voiceio.call import PhoneCall
from voiceio.speech import Deepgram

log = logging.getLogger(__name__)
#: a media message is a 20 ms frame in JSON (about 300 bytes); nothing needs more
MAX_MESSAGE_BYTES = 64 * 1024
HANDSHAKE_SECONDS = 10.0
METRICS_PATH = "/metrics"
#: a request head longer than this is no scrape: it goes to the WebSocket server as it came
MAX_HEAD_BYTES = 16 * 1024


class VoiceServer:
    """Calls in progress, and the speech provider they share."""

    def __init__(self, service: Service, speech: Deepgram | None = None) -> None:
        self.service = service
        self.speech = speech or Deepgram(service.settings)
        self.calls = 0  # in progress
        self.peak = 0
        self._call_ended = trio.Event()

    async def handle(self, request: WebSocketRequest) -> None:
        try:
            admitted = await self._admit(request)
        except Exception:  # nothing a stranger sends may stop the server
            log.exception("refused a media stream whose upgrade could not be read")
            with suppress(Exception):
                await request.reject(400, body=b"not a media stream upgrade\n")
            return
        if not admitted:
            return
        self.calls += 1
        self.peak = max(self.peak, self.calls)
        metrics.VOICE_CALLS.inc()
        try:
            socket = await request.accept()
            await PhoneCall(self.service, self.speech, socket).run()
        except Exception:
            log.exception("a call failed")
        finally:
            self.calls -= 1
            metrics.VOICE_CALLS.dec()
            self._call_ended.set()
            self._call_ended = trio.Event()

    async def wait_for_no_calls(self) -> None:
        """Until no call is in progress."""
        while self.calls:
            await self._call_ended.wait()

    async def _admit(self, request: WebSocketRequest) -> bool:
        """Whether to accept the upgrade; refused with its status when not."""
        settings = self.service.settings
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in request.headers
        }
        given = next((headers[h.lower()] for h in SIGNATURE_HEADERS if h.lower() in headers), None)
        urls = signed_urls(
            settings.voice_public_url,
            settings.public_base_url,
            settings.voice_port,
            headers.get("host", ""),
            request.path.partition("?")[0],
        )
        verdict = check_upgrade(
            settings.telco_auth_token, urls, given, settings.voice_allow_unsigned
        )
        if not verdict.accepted:
            log.info("refused a media stream: %s", verdict.reason)
            metrics.VOICE_CALLS_REFUSED.labels("unverified").inc()
            await request.reject(403, body=b"the media stream is not verified\n")
            return False
        if not verdict.signed:
            log.warning(
                "VOICE_ALLOW_UNSIGNED=true: accepted an unverified media stream (%s); "
                "turn it off outside local testing",
                verdict.reason,
            )
        if self.service.stopping.is_set():
            log.info("refused a call: the service is shutting down")
            metrics.VOICE_CALLS_REFUSED.labels("shutting_down").inc()
            await request.reject(503, body=b"the service is shutting down\n")
            return False
        if self.calls >= settings.voice_max_calls:
            log.warning("refused a call: %d calls are in progress (VOICE_MAX_CALLS)", self.calls)
            metrics.VOICE_CALLS_REFUSED.labels("busy").inc()
            await request.reject(503, body=b"too many calls in progress\n")
            return False
        return True


async def serve_voice(
    service: Service,
    *,
    port: int | None = None,
    server: VoiceServer | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve calls until cancelled, or until ``service.stopping`` is set and the calls in
    progress have been closed; on VOICE_PORT or ``port`` (0: any free one).
    ``task_status.started`` gets the port listened on."""
    settings = service.settings
    server = server or VoiceServer(service)
    # Database work in worker threads here, not on the event loop: with 20 calls the loop
    # relays a thousand media frames a second each way, and a query's round trips awaited
    # on it left a turn's search at p95 44-165 ms against 43-49 in threads, voice-to-voice
    # p95 1,185-1,423 ms against 1,133-1,161 (scripts/bench_voice.py --only load
    # --words-per-second 0 --per-call 4, two runs each, alternated)
    # (the calls' tasks, started here, inherit it; an API in the same process keeps the loop)
    WORK_ON_LOOP.set(False)
    try:
        async with trio.open_nursery() as nursery:
            listeners = await trio.open_tcp_listeners(
                settings.voice_port if port is None else port, host=settings.voice_bind
            )
            listening = await nursery.start(
                MetricsAndMediaServer(
                    service,
                    server.handle,
                    listeners,
                    max_message_size=MAX_MESSAGE_BYTES,
                    connect_timeout=HANDSHAKE_SECONDS,
                    disconnect_timeout=2.0,
                ).run
            )
            port = listening.port
            log.info("voice server listening on %s:%s", settings.voice_bind, port)
            task_status.started(port)
            await service.stopping.wait()
            log.info("voice server: closing the %d calls in progress", server.calls)
            await server.wait_for_no_calls()
            log.info("voice server: no call in progress; stopped")
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await server.speech.aclose()


class MetricsAndMediaServer(WebSocketServer):
    """The WebSocket server, answering ``GET /metrics`` on its port too: each connection's
    request head is read (within HANDSHAKE_SECONDS) before the WebSocket handshake sees it."""

    def __init__(self, service: Service, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.service = service

    async def _handle_connection(self, stream: trio.abc.Stream) -> None:
        with trio.move_on_after(HANDSHAKE_SECONDS) as waited:
            head = await _read_head(stream)
        if waited.cancelled_caught:  # as the WebSocket server ends a handshake too slow
            await stream.aclose()
            return
        target = _metrics_request(head)
        if target is None:
            await super()._handle_connection(Replayed(stream, head))
            return
        try:
            with trio.move_on_after(HANDSHAKE_SECONDS):
                await stream.send_all(self._answer(*target))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the scraper left
        finally:
            await stream.aclose()

    def _answer(self, method: str, headers: dict[str, str]) -> bytes:
        """The HTTP answer to a request for /metrics, as the API's (``ragio.http.metrics``)."""
        settings = self.service.settings
        configured = settings.service_api_key.encode("utf-8")
        given = _presented_key(headers)
        if method not in ("GET", "HEAD"):
            status, body, extra = "405 Method Not Allowed", b"", {"Allow": "GET, HEAD"}
            content_type = "text/plain; charset=utf-8"
        elif not settings.metrics_public and not (
            hmac.compare_digest(given, configured)
            if configured
            # no key: open on loopback only, as the API (which listens there alone then)
            else is_loopback(settings.voice_bind) or settings.allow_insecure_bind
        ):
            if not configured:
                detail = (
                    f"VOICE_BIND={settings.voice_bind} reaches beyond this machine: set "
                    "SERVICE_API_KEY to read the metrics with it, or METRICS_PUBLIC=true"
                )
            elif given:
                detail = "wrong API key"
            else:
                detail = (
                    "send the API key in the X-API-Key header or as Authorization: Bearer <key>"
                )
            problem = {"type": "about:blank", "title": "Unauthorized", "status": 401}
            body = json.dumps({**problem, "detail": detail}).encode("utf-8")
            status, content_type = "401 Unauthorized", "application/problem+json"
            extra = {"WWW-Authenticate": "X-API-Key"}
        else:
            status, body, extra = "200 OK", metrics.exposition(), {}
            content_type = metrics.CONTENT_TYPE
        lines = [
            f"HTTP/1.1 {status}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in extra.items()),
        ]
        answer = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return answer if method == "HEAD" else answer + body


async def _read_head(stream: trio.abc.Stream) -> bytes:
    """What the client sent up to the end of its request head (and any bytes after it);
    less when it stopped sending or the head outgrew MAX_HEAD_BYTES."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < MAX_HEAD_BYTES:
        try:
            data = await stream.receive_some(MAX_HEAD_BYTES)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            break
        if not data:
            break
        head += data
    return head


def _metrics_request(head: bytes) -> tuple[str, dict[str, str]] | None:
    """The method and headers of a plain HTTP request for /metrics (not an upgrade); None
    for anything else."""
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return None
    request_line, *header_lines = head[:end].decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or parts[1].partition("?")[0] != METRICS_PATH:
        return None
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("upgrade", "").lower() == "websocket":
        return None
    return parts[0], headers


def _presented_key(headers: dict[str, str]) -> bytes:
    """``X-API-Key``, or ``Authorization: Bearer``, as ``ragio.http.access`` reads them."""
    given = headers.get("x-api-key")
    if given is None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else ""
    return given.encode("utf-8")


class Replayed(trio.abc.Stream):
    """``stream``, with the bytes already read from it received first."""

    def __init__(self, stream: trio.abc.Stream, read: bytes) -> None:
        self.stream, self.read = stream, read

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if self.read:
            size = len(self.read) if max_bytes is None else max_bytes
            data, self.read = self.read[:size], self.read[size:]
            return data
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()
