"""The voice server: a raw WebSocket server (not an HTTP route) on VOICE_BIND:VOICE_PORT,
where the telephony provider opens one media stream per call.

An upgrade is checked before anything is accepted: its signature (``ragcore.voice.upgrade``;
VOICE_ALLOW_UNSIGNED lets an unsigned one in for local testing, with a warning each
time), then room for one more call (VOICE_MAX_CALLS: more would make every call's audio
stutter on a small machine; the provider plays its fallback to the extra caller).

When the service stops (``service.stopping``, on SIGTERM), a new stream is refused (503)
and each call in progress is closed politely (``voiceio.call``): ``serve_voice`` returns
as soon as none is left, and whatever remains at the end of SHUTDOWN_GRACE_SECONDS is
cancelled by its caller.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from functools import partial
from typing import Any

import trio
from trio_websocket import WebSocketRequest, serve_websocket

from ragcore.channels.telco import SIGNATURE_HEADERS
from ragcore.voice.upgrade import check_upgrade, signed_urls
from ragio import metrics
from ragio.service import Service
from voiceio.call import PhoneCall
from voiceio.speech import Deepgram

log = logging.getLogger(__name__)
#: a media message is a 20 ms frame in JSON (about 300 bytes); nothing needs more
MAX_MESSAGE_BYTES = 64 * 1024
HANDSHAKE_SECONDS = 10.0


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
    try:
        async with trio.open_nursery() as nursery:
            listening = await nursery.start(
                partial(
                    serve_websocket,
                    server.handle,
                    settings.voice_bind,
                    settings.voice_port if port is None else port,
                    None,
                    max_message_size=MAX_MESSAGE_BYTES,
                    connect_timeout=HANDSHAKE_SECONDS,
                    disconnect_timeout=2.0,
                )
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
