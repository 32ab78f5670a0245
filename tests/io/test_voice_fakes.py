"""The voice tests' own tooling, checked against real clients and servers: phone audio that
pocketsphinx transcribes back, the fake Deepgram (live transcription over a real WebSocket,
speech over HTTP), and the fake phone line against a small Media Streams server."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx
import numpy as np
import pytest
import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    WebSocketConnection,
    WebSocketRequest,
    open_websocket_url,
    serve_websocket,
)
from twilio.request_validator import RequestValidator

from tests.io import audio
from tests.io.fakes.deepgram_server import FakeDeepgram
from tests.io.fakes.phone import PhoneCall, phone_call

KEY = "dg-test-key"
TOKEN = "f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8"
QUESTION = "How long do I have to return an item"
LISTEN = "/v1/listen?encoding=mulaw&sample_rate=8000"

# ---------------------------------------------------------------- audio


def test_mulaw_is_g711():
    codes = bytes(range(256))
    pcm = audio.mulaw_to_pcm16(codes)
    assert (pcm[0xFF], pcm[0x7F], pcm[0x00], pcm[0x80]) == (0, 0, -32124, 32124)
    assert (pcm[0xFE], pcm[0x7E], pcm[0xEF]) == (8, -8, 132)  # the smallest steps
    # every code survives a round trip, but µ-law's two zeros become one
    again = audio.pcm16_to_mulaw(pcm)
    assert [c for c in range(256) if again[c] != c] == [0x7F]
    assert audio.pcm16_to_mulaw(np.array([0, 32767, -32768])) == bytes([0xFF, 0x80, 0x00])


def test_silence_attenuate_and_mix():
    assert audio.silence(20) == b"\xff" * audio.FRAME_BYTES
    loud = audio.pcm16_to_mulaw(np.full(800, 10000))
    quiet = audio.mulaw_to_pcm16(audio.attenuate(loud, -20.0))
    assert np.all(np.abs(quiet - 1000) < 40)  # a tenth, within a µ-law step
    mixed = audio.mulaw_to_pcm16(audio.mix(loud, audio.attenuate(loud, -20.0)[:400]))
    assert len(mixed) == 800
    assert np.all(np.abs(mixed[:400] - 11000) < 400) and np.all(np.abs(mixed[400:] - 10000) < 400)
    clipped = audio.mulaw_to_pcm16(audio.mix(audio.pcm16_to_mulaw(np.full(8, 30000)), loud))
    assert np.all(clipped[:8] == 32124)  # summed and clipped at full scale, not wrapped round


@pytest.mark.parametrize(
    ("sentence", "keywords"),
    [
        (QUESTION, ["how long", "return", "item"]),
        ("Items can be returned within thirty days of delivery", ["thirty days"]),
        ("Can I get a refund", ["can i get a refund"]),
    ],
)
async def test_speech_transcribes_back(sentence, keywords):
    speech = await trio.to_thread.run_sync(audio.speak, sentence)
    assert 1.0 < audio.duration(speech) < 5.0
    assert speech == await trio.to_thread.run_sync(audio.speak, sentence)  # same every time
    # as a segmenter cuts it from a phone line: line silence around the speech
    heard = await trio.to_thread.run_sync(
        audio.transcribe, audio.silence(250) + speech + audio.silence(250)
    )
    for keyword in keywords:
        assert keyword in heard


# ---------------------------------------------------------------- the fake Deepgram


@pytest.fixture
async def deepgram(serve_fake) -> FakeDeepgram:
    return await serve_fake(FakeDeepgram(KEY))


def token(key: str = KEY) -> list[tuple[bytes, bytes]]:
    return [(b"Authorization", f"Token {key}".encode())]


async def stream(ws: WebSocketConnection, mulaw: bytes, *, speedup: float = 4.0) -> None:
    """``mulaw`` in 20 ms frames, ``speedup`` times faster than real time."""
    due = trio.current_time()
    for i in range(0, len(mulaw), audio.FRAME_BYTES):
        await ws.send_message(mulaw[i : i + audio.FRAME_BYTES])
        due += 0.02 / speedup
        await trio.sleep_until(due)


async def read_until(
    ws: WebSocketConnection, done: Callable[[dict[str, Any]], bool], timeout: float = 20
) -> list[dict[str, Any]]:
    """The messages received up to and including the first that is ``done``."""
    messages = []
    with trio.fail_after(timeout):
        while True:
            messages.append(json.loads(await ws.get_message()))
            if done(messages[-1]):
                return messages


def kind(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda message: message.get("type") == name


async def test_listen_transcribes_speech_in_deepgrams_shape(deepgram):
    speech = await trio.to_thread.run_sync(audio.speak, QUESTION)
    options = "&endpointing=300&interim_results=true&vad_events=true&utterance_end_ms=1000"
    url = deepgram.ws_url + LISTEN + options + "&model=nova-2-phonecall&language=en-US"
    async with open_websocket_url(url, extra_headers=token()) as ws:
        await stream(ws, audio.silence(400) + speech + audio.silence(1200))
        messages = await read_until(ws, kind("UtteranceEnd"))
        await ws.send_message(json.dumps({"type": "KeepAlive"}))
        await ws.send_message(json.dumps({"type": "CloseStream"}))
        closing = await read_until(ws, kind("Metadata"))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.get_message()
    assert closed.value.reason.code == 1000

    started = messages[0]
    assert started["type"] == "SpeechStarted" and started["channel"] == [0, 1]
    assert 0.3 <= started["timestamp"] <= 0.6  # the speech began 400 ms into the audio
    results = [m for m in messages if m["type"] == "Results"]
    interims, finals = results[:-1], results[-1:]
    assert interims and all(not m["is_final"] and not m["speech_final"] for m in interims)
    (final,) = finals
    assert final["is_final"] and final["speech_final"] and not final["from_finalize"]
    alternative = final["channel"]["alternatives"][0]
    for keyword in ("how long", "return", "item"):
        assert keyword in alternative["transcript"]
    assert [w["word"] for w in alternative["words"]] == alternative["transcript"].split()
    assert alternative["confidence"] > 0
    assert final["channel_index"] == [0, 1] and final["start"] == 0.0
    spoken = 0.4 + audio.duration(speech)
    last_word_end = alternative["words"][-1]["end"]
    assert 1.0 < last_word_end < spoken
    assert final["duration"] - last_word_end == pytest.approx(0.3, abs=0.021)  # endpointing
    (listener,) = deepgram.listeners
    assert final["metadata"]["request_id"] == listener.request_id
    assert messages[-1]["type"] == "UtteranceEnd" and messages[-1]["channel"] == [0, 1]
    assert messages[-1]["last_word_end"] == last_word_end

    metadata = closing[-1]
    assert metadata["request_id"] == listener.request_id and metadata["channels"] == 1
    assert metadata["duration"] == pytest.approx(spoken + 1.2, abs=0.01)
    assert listener.audio_bytes == audio.silence(400) + speech + audio.silence(1200)
    assert len(listener.keepalives) == 1 and listener.controls[-1][1] == {"type": "CloseStream"}
    assert listener.query["model"] == "nova-2-phonecall" and listener.query["endpointing"] == "300"
    assert [text for _, text in listener.transcripts] == [alternative["transcript"]]
    assert listener.closed_by == "server" and listener.close_code == 1000


def arrival(listener: Any, seconds: float) -> float:
    """When the audio up to ``seconds`` into the stream had arrived."""
    needed, total = round(seconds * audio.SAMPLE_RATE), 0
    for at, chunk in listener.audio:
        total += len(chunk)
        if total >= needed:
            return at
    raise AssertionError(f"only {total} bytes arrived")


async def test_a_scripted_transcriber_and_delay_replace_pocketsphinx(deepgram):
    deepgram.transcriber = lambda mulaw: "how long do i have to return an item"
    deepgram.final_delay = 0.3
    speech = await trio.to_thread.run_sync(audio.speak, QUESTION)
    async with open_websocket_url(deepgram.ws_url + LISTEN, extra_headers=token()) as ws:
        # Deepgram's default endpointing, 10 ms: the first pause ends an utterance
        await stream(ws, speech + audio.silence(100), speedup=10)
        final = (await read_until(ws, lambda m: m.get("is_final", False)))[-1]
        await ws.send_message(json.dumps({"type": "Finalize"}))
        flushed = await read_until(ws, lambda m: m.get("from_finalize", False))
    assert (
        final["channel"]["alternatives"][0]["transcript"] == "how long do i have to return an item"
    )
    (listener,) = deepgram.listeners
    sent_at = listener.finals[0][0]
    endpoint = arrival(listener, final["start"] + final["duration"])
    assert 0.3 <= sent_at - endpoint <= 0.4  # final_delay after the silence that ended it
    assert flushed[-1]["is_final"] and flushed[-1]["type"] == "Results"


async def test_listen_closes_an_idle_connection_as_deepgram_does(serve_fake):
    deepgram = await serve_fake(FakeDeepgram(KEY, idle_timeout=0.5))
    async with open_websocket_url(deepgram.ws_url + LISTEN, extra_headers=token()) as ws:
        opened = trio.current_time()
        for _ in range(4):  # KeepAlive keeps it open
            await trio.sleep(0.3)
            await ws.send_message(json.dumps({"type": "KeepAlive"}))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.get_message()
    assert (closed.value.reason.code, closed.value.reason.reason) == (1011, "NET-0001")
    assert trio.current_time() - opened == pytest.approx(1.7, abs=0.25)
    assert len(deepgram.listeners[0].keepalives) == 4


async def test_listen_refuses_a_bad_key_or_format_with_deepgrams_error(deepgram):
    for key in ("wrong-key", None):
        headers = token(key) if key else []
        with pytest.raises(ConnectionRejected) as refused:
            async with open_websocket_url(deepgram.ws_url + LISTEN, extra_headers=headers):
                pass
        assert refused.value.status_code == 401
        body = json.loads(refused.value.body)
        assert (body["err_code"], body["err_msg"]) == ("INVALID_AUTH", "Invalid credentials.")
        assert dict(refused.value.headers)[b"dg-error"] == b"Invalid credentials."
    linear = "/v1/listen?encoding=linear16&sample_rate=16000"
    with pytest.raises(ConnectionRejected) as refused:
        async with open_websocket_url(deepgram.ws_url + linear, extra_headers=token()):
            pass
    assert refused.value.status_code == 400
    assert json.loads(refused.value.body)["err_code"] == "Bad Request"
    deepgram.fail_listen_next(429)
    with pytest.raises(ConnectionRejected) as refused:
        async with open_websocket_url(deepgram.ws_url + LISTEN, extra_headers=token()):
            pass
    assert refused.value.status_code == 429
    assert [r.status for r in deepgram.refused] == [401, 401, 400, 429]
    assert not deepgram.listeners
    # a browser's way: the key as subprotocols
    url = deepgram.ws_url + LISTEN
    async with open_websocket_url(url, subprotocols=["token", KEY]) as ws:
        assert ws.subprotocol == "token"


async def test_listen_connections_can_be_dropped_mid_call(deepgram):
    async with open_websocket_url(deepgram.ws_url + LISTEN, extra_headers=token()) as ws:
        await ws.send_message(audio.silence(200))
        await deepgram.wait_for_listeners(1)
        deepgram.drop_listeners()
        with pytest.raises(ConnectionClosed) as closed:
            await ws.get_message()
    assert closed.value.reason.code == 1011
    assert not deepgram.live


SPEAK = "/v1/speak?model=aura-asteria-en&encoding=mulaw&sample_rate=8000&container=none"


async def test_speak_streams_mulaw_that_transcribes_back(deepgram):
    deepgram.first_byte_delay = 0.2
    async with httpx.AsyncClient(base_url=deepgram.base_url, timeout=30) as client:
        sent = trio.current_time()
        request = client.build_request(
            "POST", SPEAK, json={"text": QUESTION}, headers={"Authorization": f"Token {KEY}"}
        )
        response = await client.send(request, stream=True)
        first = None
        body = b""
        async for chunk in response.aiter_raw():
            first = first or trio.current_time()
            body += chunk
    assert response.status_code == 200
    assert response.headers["content-type"] == "audio/mulaw"
    assert response.headers["dg-char-count"] == str(len(QUESTION))
    assert "content-length" not in response.headers  # streamed, chunked
    assert first is not None and first - sent >= 0.2
    assert body == await trio.to_thread.run_sync(audio.speak, QUESTION)
    heard = await trio.to_thread.run_sync(audio.transcribe, body)
    assert "how long" in heard and "return" in heard
    assert [s.text for s in deepgram.spoken] == [QUESTION]


async def test_speak_answers_errors_in_deepgrams_shape(deepgram):
    async def post(path: str = SPEAK, key: str = KEY, **kwargs: Any) -> httpx.Response:
        async with httpx.AsyncClient(base_url=deepgram.base_url, timeout=30) as client:
            kwargs.setdefault("json", {"text": "Hello"})
            return await client.post(path, headers={"Authorization": f"Token {key}"}, **kwargs)

    refused = await post(key="wrong")
    assert refused.status_code == 401 and refused.json()["err_code"] == "INVALID_AUTH"
    wrong = await post(SPEAK.replace("sample_rate=8000", "sample_rate=24000"))
    assert wrong.status_code == 400 and wrong.json()["err_code"] == "Bad Request"
    assert set(wrong.json()) == {"err_code", "err_msg", "request_id"}
    empty = await post(json={"text": ""})
    assert empty.status_code == 400
    deepgram.fail_next(429)
    limited = await post()
    assert limited.status_code == 429 and limited.json()["err_code"] == "TOO_MANY_REQUESTS"
    deepgram.fail_next(500)
    assert (await post()).status_code == 500
    wav = await post(SPEAK.replace("&container=none", ""))
    assert wav.headers["content-type"] == "audio/wav" and wav.content[:4] == b"RIFF"
    assert [s.text for s in deepgram.spoken] == ["Hello"]  # the one that got through


# ---------------------------------------------------------------- the fake phone


@attrs.define
class MediaServer:
    """A minimal Media Streams endpoint: checks the signature the provider's way, records
    what arrives with its arrival time, and runs ``script`` beside the reading."""

    url: str = ""
    public_url: str | None = None  # the URL signatures are checked against, when not ``url``
    signatures: list[bool | None] = attrs.field(factory=list)
    messages: list[tuple[float, dict[str, Any]]] = attrs.field(factory=list)
    script: Callable[[WebSocketConnection, MediaServer], Awaitable[None]] | None = None
    closed: trio.Event = attrs.field(factory=trio.Event)
    done: trio.Event = attrs.field(factory=trio.Event)  # set when ``script`` has run

    def events(self, name: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.messages if m["event"] == name]

    async def _run_script(self, ws: WebSocketConnection) -> None:
        assert self.script is not None
        await self.script(ws, self)
        self.done.set()

    async def stream_sid(self) -> str:
        """The call's streamSid, once ``start`` has arrived."""
        while not self.events("start"):
            await trio.sleep(0.01)
        return self.events("start")[0][1]["streamSid"]

    async def handle(self, request: WebSocketRequest) -> None:
        signature = dict(request.headers).get(b"x-twilio-signature")
        valid = None
        if signature is not None:
            url = self.public_url or self.url
            valid = RequestValidator(TOKEN).validate(url, {}, signature.decode())
        self.signatures.append(valid)
        if not valid:
            await request.reject(403)
            return
        ws = await request.accept()
        async with trio.open_nursery() as nursery:
            if self.script is not None:
                nursery.start_soon(self._run_script, ws)
            try:
                while True:
                    self.messages.append((trio.current_time(), json.loads(await ws.get_message())))
            except ConnectionClosed:
                self.closed.set()
                nursery.cancel_scope.cancel()


@pytest.fixture
async def media(nursery) -> MediaServer:
    server = MediaServer()
    listening = await nursery.start(serve_websocket, server.handle, "127.0.0.1", 0, None)
    server.url = f"ws://127.0.0.1:{listening.port}/voice/stream"
    return server


def frames(server: MediaServer) -> list[dict[str, Any]]:
    return [m for _, m in server.events("media")]


async def test_the_phone_streams_a_frame_every_20_ms(media):
    speech = await trio.to_thread.run_sync(audio.speak, "Can I get a refund")
    parameters = {"caller": "+15551234567", "call_sid": "CA" + "1" * 32}
    async with phone_call(media.url, auth_token=TOKEN, parameters=parameters) as call:
        await call.pause(400)
        began = len([m for _, m in call.sent if m["event"] == "media"])
        await call.say(speech)
        await call.press("1")
        await call.hang_up()
    await media.closed.wait()

    assert media.signatures == [True]
    assert media.messages[0][1] == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    start = media.messages[1][1]
    assert start["event"] == "start" and start["sequenceNumber"] == "1"
    assert start["streamSid"] == call.stream_sid and start["streamSid"].startswith("MZ")
    assert start["start"]["callSid"] == call.call_sid
    assert start["start"]["customParameters"] == parameters
    assert start["start"]["mediaFormat"] == {
        "encoding": "audio/x-mulaw",
        "sampleRate": 8000,
        "channels": 1,
    }
    media_frames = frames(media)
    assert [m["media"]["chunk"] for m in media_frames] == [
        str(n) for n in range(1, len(media_frames) + 1)
    ]
    numbers = [int(m["sequenceNumber"]) for _, m in media.messages[1:]]
    assert numbers == list(range(1, len(numbers) + 1))
    payloads = [base64.b64decode(m["media"]["payload"]) for m in media_frames]
    assert all(len(p) == audio.FRAME_BYTES for p in payloads)
    assert all(p == audio.silence(20) for p in payloads[:began])
    said = speech.ljust(-(-len(speech) // 160) * 160, b"\xff")
    assert b"".join(payloads[began : began + len(said) // 160]) == said
    timestamps = [int(m["media"]["timestamp"]) for m in media_frames]
    assert timestamps == [20 * n for n in range(len(timestamps))]
    arrivals = [at for at, _ in media.events("media")]
    span = arrivals[-1] - arrivals[0]
    assert span == pytest.approx(0.02 * (len(arrivals) - 1), abs=0.06)  # real time, no drift
    (dtmf,) = [m for _, m in media.events("dtmf")]
    assert dtmf["dtmf"] == {"track": "inbound_track", "digit": "1"}
    (stop,) = [m for _, m in media.events("stop")]
    assert stop["stop"] == {"accountSid": call.account_sid, "callSid": call.call_sid}
    assert media.messages[-1][1]["event"] == "stop"


async def test_a_caller_cut_off_stops_talking(media):
    speech = await trio.to_thread.run_sync(audio.speak, QUESTION)
    async with phone_call(media.url, auth_token=TOKEN) as call:
        with trio.move_on_after(0.1):
            await call.say(speech)
        await call.pause(100)
    said = [base64.b64decode(m["media"]["payload"]) for _, m in call.sent if m["event"] == "media"]
    first = said.index(speech[:160])
    spoken = 0
    while said[first + spoken] == speech[spoken * 160 : (spoken + 1) * 160]:
        spoken += 1
    assert 3 <= spoken <= 8  # about 100 ms of the sentence, not its 2.4 s
    assert all(frame == audio.silence(20) for frame in said[first + spoken :])


async def test_the_phone_signs_as_the_provider_does(media):
    for sign in ("forged", "none"):
        with pytest.raises(ConnectionRejected) as refused:
            async with phone_call(media.url, auth_token=TOKEN, sign=sign):
                pass
        assert refused.value.status_code == 403
    assert media.signatures == [False, None]
    # behind a proxy: signed over the URL the provider was given, which the service checks
    media.public_url = "wss://shop.example.com/voice/stream"
    async with phone_call(media.url, auth_token=TOKEN, signed_url=media.public_url):
        pass
    assert media.signatures == [False, None, True]


def media_message(call_sid: str, mulaw: bytes) -> str:
    payload = base64.b64encode(mulaw).decode()
    return json.dumps({"event": "media", "streamSid": call_sid, "media": {"payload": payload}})


def mark_message(stream_sid: str, name: str) -> str:
    return json.dumps({"event": "mark", "streamSid": stream_sid, "mark": {"name": name}})


async def test_the_phone_plays_in_real_time_and_returns_marks(media):
    sent: dict[str, float] = {}

    async def script(ws: WebSocketConnection, server: MediaServer) -> None:
        stream_sid = await server.stream_sid()
        sent["first"] = trio.current_time()
        await ws.send_message(media_message(stream_sid, audio.silence(300)[:2000]))
        await ws.send_message(media_message(stream_sid, b"\x00" * 400))  # 250 ms + 50 ms
        await ws.send_message(mark_message(stream_sid, "first"))
        await trio.sleep(0.5)
        sent["second"] = trio.current_time()
        await ws.send_message(media_message(stream_sid, b"\x10" * 16000))  # two seconds
        await ws.send_message(mark_message(stream_sid, "second"))
        await ws.send_message(mark_message(stream_sid, "third"))
        await trio.sleep(0.3)
        sent["clear"] = trio.current_time()
        await ws.send_message(json.dumps({"event": "clear", "streamSid": stream_sid}))
        await ws.send_message(media_message("MZ" + "0" * 32, b"\xff" * 160))  # not this call

    media.script = script
    async with phone_call(media.url, auth_token=TOKEN) as call:
        await media.done.wait()
        await call.wait_until_played(5)
        await trio.sleep(0.1)  # the marks' sends
    await media.closed.wait()

    assert len(call.heard) == 2000 + 400 + 16000  # not the other call's
    first, second, third = call.marks
    assert (first.name, first.cleared) == ("first", False)
    assert first.at - sent["first"] == pytest.approx(0.3, abs=0.05)  # when its audio had played
    assert (second.name, second.cleared, third.name, third.cleared) == (
        "second",
        True,
        "third",
        True,
    )
    assert second.at - sent["clear"] == pytest.approx(0.0, abs=0.05)  # at once on clear
    assert third.at == pytest.approx(second.at, abs=0.01)
    returned = [m["mark"]["name"] for _, m in media.events("mark")]
    assert returned == ["first", "second", "third"]
    played = call.played_audio
    assert played.startswith(audio.silence(300)[:2000] + b"\x00" * 400)
    assert 0.25 <= audio.duration(played[2400:]) <= 0.35  # until the clear, not two seconds
    starts = [p.at for p in call.played]
    assert starts[0] - sent["first"] == pytest.approx(0.0, abs=0.05)
    assert starts[14] - starts[0] == pytest.approx(14 * 0.02, abs=1e-6)  # back to back
    assert all(len(p.audio) == 160 for p in call.played[:15])  # across messages
    assert call.violations == ["media for streamSid 'MZ00000000000000000000000000000000'"]


async def test_the_line_echoes_what_plays(media):
    tone = audio.pcm16_to_mulaw((8000 * np.sin(np.arange(8000) * 0.3)).astype(np.int16))

    async def script(ws: WebSocketConnection, server: MediaServer) -> None:
        stream_sid = await server.stream_sid()
        await ws.send_message(media_message(stream_sid, tone))

    media.script = script
    async with phone_call(media.url, auth_token=TOKEN, echo_db=-20.0, echo_delay_ms=100) as call:
        await call.wait_for_audio(5)
        await call.wait_until_played(5)
        await call.pause(200)
    inbound = b"".join(base64.b64decode(m["media"]["payload"]) for m in frames(media))
    levels = [
        float(np.sqrt(np.mean(audio.mulaw_to_pcm16(inbound[i : i + 160]).astype(float) ** 2)))
        for i in range(0, len(inbound), 160)
    ]
    echoed = [i for i, level in enumerate(levels) if level > 100]
    assert echoed, "no echo on the inbound track"
    # a second of tone comes back a tenth as loud (8000 / sqrt 2 / 10 = 566 RMS)
    assert 45 <= len(echoed) <= 52
    assert np.median([levels[i] for i in echoed]) == pytest.approx(566, rel=0.15)
    played_from = (call.played[0].at - call.started_at) * 1000
    first_echo_ms = echoed[0] * 20
    assert first_echo_ms - played_from == pytest.approx(100, abs=45)


async def test_the_phone_without_echo_hears_nothing_back(media):
    async def script(ws: WebSocketConnection, server: MediaServer) -> None:
        stream_sid = await server.stream_sid()
        await ws.send_message(media_message(stream_sid, b"\x00" * 1600))

    media.script = script
    async with phone_call(media.url, auth_token=TOKEN) as call:
        await call.wait_for_audio(5)
        await call.wait_until_played(5)
        await call.drop()
    assert all(
        m["media"]["payload"] == base64.b64encode(audio.silence(20)).decode() for m in frames(media)
    )
    assert not media.events("stop")


async def test_a_service_hanging_up_ends_the_call(media):
    async def script(ws: WebSocketConnection, server: MediaServer) -> None:
        await trio.sleep(0.2)
        await ws.aclose()

    media.script = script
    speech = await trio.to_thread.run_sync(audio.speak, QUESTION)
    async with phone_call(media.url, auth_token=TOKEN) as call:
        with trio.fail_after(2):
            await call.say(speech)  # returns when the call ends, not after the sentence
        assert call.ended.is_set() and call.close_code == 1000
        with pytest.raises(TimeoutError):
            await call.wait_for_audio(1)


async def test_an_error_in_the_call_reaches_the_test_unwrapped(media):
    with pytest.raises(KeyError):
        async with phone_call(media.url, auth_token=TOKEN) as call:
            assert isinstance(call, PhoneCall)
            raise KeyError("the test's own")
