"""The speech provider's client (voiceio.speech.Deepgram) against a raw HTTP server on
127.0.0.1 that misbehaves as a real one can."""

from __future__ import annotations

from functools import partial

import trio

from tests.conftest import make_settings
from voiceio.speech import Deepgram, SpeechError

AUDIO = bytes(range(256)) * 8


async def speak_server(nursery: trio.Nursery, dropped: int) -> tuple[str, list[int]]:
    """An HTTP/1.1 server whose first ``dropped`` connections read the request and close
    without a word (a kept-alive connection closed by the server as it is reused); the
    others answer with AUDIO. Returns its base URL and the connections it has had."""
    connections: list[int] = []

    async def handle(stream: trio.SocketStream) -> None:
        connections.append(len(connections) + 1)
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some(4096)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += await stream.receive_some(4096)
        if len(connections) <= dropped:
            await stream.aclose()
            return
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: audio/basic\r\n"
            b"content-length: %d\r\n\r\n" % len(AUDIO) + AUDIO
        )
        await stream.aclose()

    listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    return f"http://127.0.0.1:{port}", connections


async def spoken(base_url: str) -> bytes:
    settings = make_settings(voiceai_api_key="dg-key", voiceai_base_url=base_url)
    speech = Deepgram(settings)
    try:
        return b"".join([chunk async for chunk in speech.synthesize("Hello.")])
    finally:
        await speech.aclose()


async def test_a_connection_closed_before_the_answer_is_asked_again_once(nursery):
    base_url, connections = await speak_server(nursery, dropped=1)
    assert await spoken(base_url) == AUDIO
    assert connections == [1, 2]


async def test_a_provider_that_keeps_closing_is_a_speech_error(nursery):
    base_url, connections = await speak_server(nursery, dropped=5)
    try:
        await spoken(base_url)
    except SpeechError as error:
        assert str(error) == "text-to-speech failed: RemoteProtocolError"
    else:
        raise AssertionError("no SpeechError")
    assert connections == [1, 2]  # asked once more, not again and again
