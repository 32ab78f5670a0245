"""The speech provider behind two small interfaces, so another can be added beside it:
a ``Listener`` (streaming speech-to-text for one call) and a ``Speaker`` (text-to-speech).
Both speak the phone's µ-law at 8 kHz: nothing is transcoded. The one implementation
speaks Deepgram's documented wire format (``ragcore.voice.deepgram``) with VOICEAI_API_KEY.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Protocol

import httpx
import trio
from trio_websocket import (
    ConnectionClosed,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

from ragcore.settings import Settings
from ragcore.voice import deepgram

log = logging.getLogger(__name__)
CONNECT_SECONDS = 5.0
#: a sentence's first audio must start within this; the rest streams as it comes
SPEAK_FIRST_BYTE_SECONDS = 5.0
SPEAK_READ_SECONDS = 10.0
CHUNK_BYTES = 1600  # 200 ms of audio: small enough to start playing early


class SpeechError(Exception):
    """The provider failed; the message says how, without the key."""


class Listener(Protocol):
    async def send_audio(self, audio: bytes) -> None: ...
    async def keep_alive(self) -> None: ...
    async def finalize(self) -> None: ...
    def results(self) -> AsyncIterator[deepgram.Heard]: ...


class Speaker(Protocol):
    def synthesize(self, text: str) -> AsyncGenerator[bytes, None]: ...


class DeepgramListener:
    """One streaming recognition over an open WebSocket."""

    def __init__(self, socket: WebSocketConnection) -> None:
        self._socket = socket

    async def send_audio(self, audio: bytes) -> None:
        await self._socket.send_message(audio)

    async def keep_alive(self) -> None:
        await self._socket.send_message(deepgram.KEEP_ALIVE)

    async def finalize(self) -> None:
        await self._socket.send_message(deepgram.FINALIZE)

    async def results(self) -> AsyncIterator[deepgram.Heard]:
        while True:
            try:
                message = await self._socket.get_message()
            except ConnectionClosed as closed:
                raise SpeechError(f"speech-to-text closed the stream ({closed.reason})") from None
            if isinstance(message, bytes):
                continue
            try:
                heard = deepgram.read_listen_message(message)
            except ValueError as error:
                raise SpeechError(f"speech-to-text sent an unreadable message: {error}") from None
            if heard is not None:
                yield heard


class Deepgram:
    """VOICEAI_API_KEY at VOICEAI_BASE_URL: ``listen()`` and ``synthesize()``."""

    def __init__(self, settings: Settings, client: httpx.AsyncClient | None = None) -> None:
        self._key = settings.voiceai_api_key
        self._listen_url = deepgram.listen_url(
            settings.voiceai_base_url, settings.voice_stt_model, settings.voice_language
        )
        self._speak_url = deepgram.speak_url(settings.voiceai_base_url, settings.voice_tts_voice)
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(SPEAK_READ_SECONDS, connect=CONNECT_SECONDS),
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    @asynccontextmanager
    async def listen(self) -> AsyncIterator[DeepgramListener]:
        """A recognition stream, closed politely (``CloseStream``) on the way out."""
        headers = [(k.encode(), v.encode()) for k, v in deepgram.auth_header(self._key).items()]
        try:
            async with open_websocket_url(
                self._listen_url,
                extra_headers=headers,
                connect_timeout=CONNECT_SECONDS,
                disconnect_timeout=1.0,
                message_queue_size=64,
            ) as socket:
                try:
                    yield DeepgramListener(socket)
                finally:
                    with trio.move_on_after(0.5) as scope:
                        scope.shield = True
                        with suppress(ConnectionClosed):
                            await socket.send_message(deepgram.CLOSE_STREAM)
        except HandshakeError as error:
            raise SpeechError(f"speech-to-text refused the stream: {_handshake(error)}") from None
        except (OSError, trio.TooSlowError) as error:
            raise SpeechError(f"speech-to-text could not be reached: {error!r}") from None

    async def synthesize(self, text: str) -> AsyncGenerator[bytes, None]:
        """The speech of ``text`` as µ-law, in chunks as the provider sends them."""
        headers = deepgram.auth_header(self._key)
        try:
            with trio.fail_after(SPEAK_FIRST_BYTE_SECONDS):
                request = self._client.build_request(
                    "POST", self._speak_url, json={"text": text}, headers=headers
                )
                try:
                    response = await self._client.send(request, stream=True)
                except httpx.RemoteProtocolError:
                    # the provider closed a kept-alive connection as it was reused, before
                    # answering: nothing was spoken yet, so ask once more on a new one
                    response = await self._client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    body = (await response.aread())[:300].decode("utf-8", "replace")
                    raise SpeechError(f"text-to-speech answered {response.status_code}: {body}")
                async for chunk in response.aiter_bytes(CHUNK_BYTES):
                    yield chunk
            finally:
                await response.aclose()
        except trio.TooSlowError:
            raise SpeechError("text-to-speech did not answer in time") from None
        except httpx.HTTPError as error:
            raise SpeechError(f"text-to-speech failed: {type(error).__name__}") from None


def _handshake(error: HandshakeError) -> str:
    status = getattr(error, "status_code", None)
    return f"HTTP {status}" if status is not None else type(error).__name__
