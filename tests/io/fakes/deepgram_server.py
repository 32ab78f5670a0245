"""A fake Deepgram on 127.0.0.1 that really listens and really speaks: a plain ASGI app speaking
Deepgram's documented wire format, served by the ``serve_fake`` fixture (``base_url`` is
``http://127.0.0.1:<port>``; ``ws_url`` the same with ``ws://``).

- ``WebSocket /v1/listen`` (live transcription): the audio is raw µ-law at 8000 Hz, so the
  handshake needs ``encoding=mulaw&sample_rate=8000`` (anything else: refused with a 400).
  A voice activity detector (webrtcvad, on the decoded samples) finds where speech starts and
  ends; ``endpointing`` ms of silence after speech (Deepgram's default 10; ``false`` turns it
  off) end an utterance, which is transcribed for real by pocketsphinx
  (``tests.io.audio.transcribe``) and sent as a final ``Results`` (``is_final`` and
  ``speech_final`` true). ``interim_results=true`` adds interim results (``is_final`` false)
  every ``interim_interval`` seconds of speech, ``vad_events=true`` a ``SpeechStarted`` when
  speech begins, ``utterance_end_ms`` an ``UtteranceEnd`` after that much silence following
  the last word. Control messages: ``KeepAlive``; ``Finalize`` (the speech so far as a final
  result with ``from_finalize``); ``CloseStream`` (the same, then ``Metadata``, then a normal
  close; an empty binary message counts as CloseStream too, as Deepgram's legacy close).
  With neither audio nor a KeepAlive for ``idle_timeout`` seconds (Deepgram: 10) the
  connection is closed with 1011 and reason ``NET-0001``, as Deepgram does.
  ``language``, ``model``, ``punctuate``, ``smart_format`` and the rest are accepted and
  recorded; the transcript is pocketsphinx's, lowercase, unpunctuated, whatever they say.
- ``POST /v1/speak?model=…&encoding=mulaw&sample_rate=8000&container=none`` with
  ``{"text": …}``: 200 with the µ-law bytes espeak-ng says (``tests.io.audio.speak``; every
  ``model`` is the same voice), streamed in ``chunk_size`` body chunks so a client can play
  the first while the rest arrive; ``content-type: audio/mulaw`` (raw) or ``audio/wav``
  (``container=wav`` or none given: Deepgram's default container wraps the samples in WAV).
  Any other encoding or sample rate: 400.

Every request needs ``Authorization: Token <api_key>`` (a browser's WebSocket may send the
key as the subprotocols ``token, <key>`` instead); without it: 401. Errors are Deepgram's
body, ``{"err_code", "err_msg", "request_id"}``; a refused WebSocket handshake is that body on
a plain HTTP response with the status, and the ``dg-error`` and ``dg-request-id`` headers
Deepgram adds for clients that cannot read a refused handshake's body. The
``websocket.http.response`` ASGI extension makes this possible: Hypercorn offers it, and
turns a ``websocket.close`` before ``accept`` into a bare 403 instead.

Scripting knobs:

- ``transcriber``: ``(µ-law bytes) -> text`` instead of pocketsphinx, for a benchmark that
  cannot afford a decode per utterance (``lambda audio: "how long do i have to return an
  item"``); speech detection and endpointing still run on the real audio;
- ``synthesizer``: ``(text) -> µ-law bytes`` instead of espeak-ng, for a test that needs
  short, known audio for each text (what the caller heard, compared byte for byte);
- ``final_delay``: seconds added before each final result is sent, after transcription;
- ``interim_interval``: seconds of speech between interim results (1.0);
- ``fail_listen_next(status)``: refuse the next handshakes (after the key check);
- ``drop_listeners(code, reason)``: close every open listening connection at once, with no
  final result or Metadata, as a failing provider does mid-call;
- ``first_byte_delay``: seconds before a speech response starts (Deepgram's time to first
  byte); a client that goes away meanwhile is noticed, and its text listed in
  ``abandoned``; ``fail_next(status)`` and ``delay``: as for every fake
  (``tests.io.fakes.asgi``), for ``/v1/speak``;
- ``idle_timeout``: a constructor argument, so a test can see the timeout in half a second.

Records: ``listeners`` (one ``Listener`` per accepted connection: query, audio with arrival
times, KeepAlives, control messages, every message sent with its time), ``refused``
(handshakes turned away), ``spoken`` (every text synthesised, with its arrival time) and
``requests`` (every HTTP request).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import struct
import uuid
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qs

import attrs
import trio
import webrtcvad

from tests.io import audio
from tests.io.fakes.asgi import (
    Failure,
    FakeServer,
    Receive,
    Recorded,
    Scope,
    Send,
    WireError,
    encode_headers,
)

LISTEN, SPEAK = "/v1/listen", "/v1/speak"
#: the ASGI ``receive`` of the request being answered: a slow answer watches it, to stop
#: when the client goes away, as a real server does
_RECEIVE: ContextVar[Receive] = ContextVar("receive")
IDLE_TIMEOUT = 10.0  # seconds without audio or KeepAlive before Deepgram closes (NET-0001)
DEFAULT_ENDPOINTING_MS = 10  # Deepgram's default
FRAME_MS = 20
PREROLL_FRAMES = 10  # 200 ms of audio kept before detected speech, so its onset is not cut
SPEECH_START_FRAMES = 2  # consecutive voiced frames that count as speech starting
VAD_MODE = 2  # webrtcvad's aggressiveness, 0-3: 2 ignores line noise, keeps quiet syllables
CHUNK_SIZE = 3200  # bytes per speech body chunk: 400 ms of µ-law
MODEL_UUID = "1ed36bac-f71c-4f3f-a31f-02fd6525c489"
TTS_MODEL = "aura-asteria-en"  # Deepgram's default voice, named when none is asked for


class DeepgramError(WireError):
    """Deepgram's error body: ``{"err_code", "err_msg", "request_id"}``."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        self.request_id = str(uuid.uuid4())
        body = {"err_code": code, "err_msg": message, "request_id": self.request_id}
        super().__init__(
            status, message, body, {"dg-request-id": self.request_id, **(headers or {})}
        )


def invalid_auth() -> DeepgramError:
    return DeepgramError(401, "INVALID_AUTH", "Invalid credentials.")


def bad_request(message: str) -> DeepgramError:
    return DeepgramError(400, "Bad Request", message)


def scripted_error(failure: Failure) -> DeepgramError:
    """The error Deepgram answers with for ``status``, as scripted by a test."""
    if failure.status == 401:
        return invalid_auth()
    if failure.status == 429:
        return DeepgramError(
            429,
            "TOO_MANY_REQUESTS",
            "Too many requests. Please try again later",
            failure.headers,
        )
    if failure.status == 400:
        return bad_request("Bad Request: the request could not be processed.")
    return DeepgramError(
        failure.status,
        "INTERNAL_SERVER_ERROR",
        "The server encountered an error while processing the request. Please try again.",
        failure.headers,
    )


# ---------------------------------------------------------------- records


@attrs.define
class Listener:
    """One accepted ``/v1/listen`` connection, as the fake saw it. Times are
    ``trio.current_time()``; ``sent`` holds every message sent, parsed, with its send time."""

    query: dict[str, str]  # the last value of each query parameter
    headers: dict[str, str]  # names lowercased
    request_id: str
    opened_at: float
    audio: list[tuple[float, bytes]] = attrs.field(factory=list, repr=False)
    keepalives: list[float] = attrs.field(factory=list)
    controls: list[tuple[float, Any]] = attrs.field(factory=list)  # every text message
    sent: list[tuple[float, dict[str, Any]]] = attrs.field(factory=list, repr=False)
    closed_at: float | None = None
    close_code: int | None = None  # the code of the close frame, whoever sent it
    closed_by: str | None = None  # "client" or "server"

    @property
    def audio_bytes(self) -> bytes:
        return b"".join(chunk for _, chunk in self.audio)

    @property
    def results(self) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.sent if m.get("type") == "Results"]

    @property
    def finals(self) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.results if m.get("is_final")]

    @property
    def transcripts(self) -> list[tuple[float, str]]:
        """The final transcripts sent, with their send times."""
        return [(at, m["channel"]["alternatives"][0]["transcript"]) for at, m in self.finals]

    def of_type(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.sent if m.get("type") == kind]


@attrs.frozen
class Refusal:
    """A ``/v1/listen`` handshake turned away."""

    at: float
    status: int
    query: dict[str, str]
    headers: dict[str, str]


@attrs.frozen
class Spoken:
    """A text ``/v1/speak`` was asked to say, when the request arrived."""

    at: float
    text: str
    query: dict[str, str]


# ---------------------------------------------------------------- finding speech


@attrs.frozen
class SpeechStarted:
    at: float  # seconds of audio before the first voiced frame


@attrs.frozen
class Utterance:
    """Speech to transcribe: ``audio`` (with some silence around it) and where its voiced part
    starts and ends, in seconds of the connection's audio."""

    number: int
    audio: bytes
    speech_start: float
    speech_end: float
    end: float  # where the audio it covers ends: the time of the result


@attrs.frozen
class Endpoint:
    """The end of an utterance: a final result is due."""

    utterance: Utterance
    speech_final: bool
    from_finalize: bool = False


@attrs.frozen
class InterimDue:
    utterance: Utterance  # the speech so far


@attrs.frozen
class UtteranceEnd:
    last_word_end: float


class Segmenter:
    """Cuts a stream of µ-law audio into utterances as a streaming recognizer's voice activity
    detector does, in audio time (what was received), not wall-clock time: 20 ms frames,
    webrtcvad per frame; speech starts with two voiced frames in a row and ends after
    ``endpointing_ms`` of unvoiced frames (None: never by silence)."""

    def __init__(
        self,
        endpointing_ms: int | None,
        utterance_end_ms: int | None = None,
        interim_interval: float | None = None,
    ) -> None:
        self.endpointing_ms = endpointing_ms
        self.utterance_end_ms = utterance_end_ms
        self.interim_interval = interim_interval
        self._vad = webrtcvad.Vad(VAD_MODE)
        self._pending = bytearray()
        self._frames = 0  # frames processed
        self._preroll: deque[bytes] = deque(maxlen=PREROLL_FRAMES)
        self._voiced_run: list[bytes] = []
        self._speech: bytearray | None = None  # the utterance being heard
        self._start = 0.0  # where its audio starts
        self._speech_start = 0.0
        self._last_voiced_end = 0.0
        self._silence_ms = 0
        self._next_interim = 0.0
        self._awaiting_utterance_end = False
        self._utterances = 0

    @property
    def now(self) -> float:
        return self._frames * FRAME_MS / 1000

    @property
    def in_speech(self) -> bool:
        return self._speech is not None

    def feed(self, mulaw: bytes) -> list[Any]:
        """The events ``mulaw`` (any length) completes, in order."""
        self._pending += mulaw
        events: list[Any] = []
        while len(self._pending) >= audio.FRAME_BYTES:
            frame = bytes(self._pending[: audio.FRAME_BYTES])
            del self._pending[: audio.FRAME_BYTES]
            events.extend(self._frame(frame))
        return events

    def flush(self, *, from_finalize: bool) -> Endpoint:
        """The speech heard so far as a final result (empty when there is none)."""
        if self._speech is not None:
            utterance = self._utterance()
            self._speech = None
        else:
            self._utterances += 1
            utterance = Utterance(self._utterances, b"", self.now, self.now, self.now)
        return Endpoint(utterance, speech_final=False, from_finalize=from_finalize)

    def _frame(self, frame: bytes) -> list[Any]:
        pcm = audio.mulaw_to_pcm16(frame).tobytes()
        voiced = self._vad.is_speech(pcm, audio.SAMPLE_RATE)
        start = self.now
        self._frames += 1
        events: list[Any] = []
        if self._speech is None:
            if voiced:
                self._voiced_run.append(frame)
                if len(self._voiced_run) >= SPEECH_START_FRAMES:
                    events.append(self._begin(start))
                    self._last_voiced_end = self.now
            else:
                self._preroll.extend(self._voiced_run)
                self._voiced_run.clear()
                self._preroll.append(frame)
                events.extend(self._gap())
            return events
        self._speech += frame
        if voiced:
            self._silence_ms = 0
            self._last_voiced_end = self.now
        else:
            self._silence_ms += FRAME_MS
        if self.endpointing_ms is not None and self._silence_ms >= self.endpointing_ms:
            events.append(Endpoint(self._utterance(), speech_final=True))
            self._speech = None
            self._awaiting_utterance_end = self.utterance_end_ms is not None
            events.extend(self._gap())
        elif self.interim_interval is not None and self.now >= self._next_interim:
            self._next_interim += self.interim_interval
            events.append(InterimDue(self._utterance()))
        return events

    def _begin(self, last_frame_start: float) -> SpeechStarted:
        run = len(self._voiced_run)
        self._speech_start = last_frame_start - (run - 1) * FRAME_MS / 1000
        self._start = self._speech_start - len(self._preroll) * FRAME_MS / 1000
        self._speech = bytearray(b"".join([*self._preroll, *self._voiced_run]))
        self._preroll.clear()
        self._voiced_run.clear()
        self._silence_ms = 0
        self._utterances += 1
        if self.interim_interval is not None:
            self._next_interim = self._speech_start + self.interim_interval
        return SpeechStarted(self._speech_start)

    def _utterance(self) -> Utterance:
        assert self._speech is not None
        return Utterance(
            self._utterances,
            bytes(self._speech),
            self._speech_start,
            self._last_voiced_end,
            self.now,
        )

    def _gap(self) -> list[Any]:
        """An UtteranceEnd, when the silence after the last word has grown long enough."""
        if not self._awaiting_utterance_end or self.utterance_end_ms is None:
            return []
        if (self.now - self._last_voiced_end) * 1000 < self.utterance_end_ms:
            return []
        self._awaiting_utterance_end = False
        return [UtteranceEnd(self._last_voiced_end)]


# ---------------------------------------------------------------- the server


class FakeDeepgram(FakeServer):
    def __init__(self, api_key: str = "dg-test-key", *, idle_timeout: float = IDLE_TIMEOUT) -> None:
        super().__init__(api_key, reply="")
        self.idle_timeout = idle_timeout
        self.transcriber: Callable[[bytes], str] | None = None
        self.synthesizer: Callable[[str], bytes] | None = None
        self.final_delay = 0.0
        self.interim_interval = 1.0
        self.first_byte_delay = 0.0
        self.chunk_size = CHUNK_SIZE
        self.listeners: list[Listener] = []
        self.refused: list[Refusal] = []
        self.spoken: list[Spoken] = []
        self.abandoned: list[str] = []  # texts whose client went away before the first byte
        self.listen_failures: deque[int] = deque()
        self._sessions: set[_Session] = set()
        self._speech: dict[str, bytes] = {}  # text -> µ-law, synthesised once
        self._listener_added = trio.Event()

    @property
    def ws_url(self) -> str:
        """``base_url`` with the WebSocket scheme."""
        return "ws" + self.base_url.removeprefix("http")

    @property
    def live(self) -> list[Listener]:
        """The listening connections still open."""
        return [session.listener for session in self._sessions]

    # ------------------------------------------------------------ scripting

    def fail_listen_next(self, status: int, *, times: int = 1) -> None:
        """Refuse the next ``times`` authorised ``/v1/listen`` handshakes with ``status``."""
        self.listen_failures.extend([status] * times)

    def drop_listeners(self, code: int = 1011, reason: str = "") -> None:
        """Close every open listening connection now with ``code``: no final result, no
        Metadata, as when the provider fails mid-call."""
        for session in list(self._sessions):
            session.drop(code, reason)

    async def wait_for_listeners(self, count: int = 1, timeout: float = 10.0) -> list[Listener]:
        """Until ``count`` connections have been accepted in all; raises TimeoutError."""
        with trio.move_on_after(timeout):
            while len(self.listeners) < count:
                await self._listener_added.wait()
            return self.listeners
        raise TimeoutError(f"{len(self.listeners)} of {count} listening connections")

    def close(self) -> None:
        super().close()
        for session in list(self._sessions):
            session.drop(1001, "")

    # ------------------------------------------------------------ plumbing

    def _failure(self, failure: Failure) -> WireError:
        return scripted_error(failure)

    def _response_headers(self) -> dict[str, str]:
        return {"dg-request-id": str(uuid.uuid4())}

    def _authorised(self, headers: dict[str, str], subprotocols: list[str] | None = None) -> bool:
        scheme, _, key = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "token" and key.strip() == self.api_key:
            return True
        return subprotocols is not None and subprotocols == ["token", self.api_key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._listen(scope, receive, send)
        else:
            _RECEIVE.set(receive)
            await super().__call__(scope, receive, send)

    # ------------------------------------------------------------ /v1/speak

    async def _hold(self, seconds: float) -> bool:
        """Wait ``seconds`` (less if the fake is closing); False when the client went away
        first: the request's connection closed (``http.disconnect``)."""
        receive = _RECEIVE.get()
        gone = False

        async def watch(nursery: trio.Nursery) -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True
            nursery.cancel_scope.cancel()

        async def closing(nursery: trio.Nursery) -> None:
            await self._closing.wait()
            nursery.cancel_scope.cancel()

        with trio.move_on_after(seconds):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch, nursery)
                nursery.start_soon(closing, nursery)
        return not gone

    async def _answer(self, request: Recorded, send: Send) -> None:
        if not self._authorised(request.headers):
            raise invalid_auth()
        await self._scripted()
        if (request.method, request.path) != ("POST", SPEAK):
            raise DeepgramError(404, "NOT_FOUND", f"Not found: {request.method} {request.path}")
        query = {name: values[-1] for name, values in request.query.items()}
        encoding = query.get("encoding", "linear16")
        sample_rate = query.get("sample_rate", "24000")
        container = query.get("container", "wav")
        if encoding != "mulaw" or sample_rate != "8000":
            raise bad_request(
                f"Unsupported audio format: encoding={encoding} sample_rate={sample_rate}; "
                "this server synthesises encoding=mulaw at sample_rate=8000 only."
            )
        if container not in ("none", "wav"):
            raise bad_request(f"Unsupported container {container!r} for encoding mulaw.")
        text = self._text(request)
        self.spoken.append(Spoken(request.at, text, query))
        speech = await self._synthesise(text)
        if container == "wav":
            speech = wav_header(len(speech)) + speech
        if self.first_byte_delay and not await self._hold(self.first_byte_delay):
            self.abandoned.append(text)
            return
        content_type = "audio/wav" if container == "wav" else "audio/mulaw"
        await self._start(
            send,
            200,
            {
                "content-type": content_type,
                "dg-model-name": query.get("model", TTS_MODEL),
                "dg-char-count": str(len(text)),
            },
        )
        size = max(1, self.chunk_size)
        chunks = [speech[i : i + size] for i in range(0, len(speech), size)] or [b""]
        for number, chunk in enumerate(chunks, 1):
            more = number < len(chunks)
            await send({"type": "http.response.body", "body": chunk, "more_body": more})

    def _text(self, request: Recorded) -> str:
        if request.headers.get("content-type", "").startswith("text/plain"):
            text: Any = request.raw.decode("utf-8", "replace")
        elif isinstance(request.body, dict):
            text = request.body.get("text")
        else:
            raise bad_request(
                "Content-type was application/json, but we could not process the JSON payload."
            )
        if not isinstance(text, str) or not text.strip():
            raise bad_request("The request must have a non-empty 'text' field.")
        return text

    async def _synthesise(self, text: str) -> bytes:
        if self.synthesizer is not None:
            return self.synthesizer(text)
        if text not in self._speech:
            self._speech[text] = await trio.to_thread.run_sync(audio.speak, text)
        return self._speech[text]

    # ------------------------------------------------------------ /v1/listen

    async def _listen(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw_query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        query = {name: values[-1] for name, values in raw_query.items()}
        subprotocols = list(scope.get("subprotocols") or [])
        error: DeepgramError | None = None
        if scope["path"] != LISTEN:
            error = DeepgramError(404, "NOT_FOUND", f"Not found: {scope['path']}")
        elif not self._authorised(headers, subprotocols):
            error = invalid_auth()
        elif self.listen_failures:
            error = scripted_error(Failure(self.listen_failures.popleft()))
        elif query.get("encoding") != "mulaw" or query.get("sample_rate") != "8000":
            error = bad_request(
                "Bad Request: this server transcribes raw audio with encoding=mulaw and "
                f"sample_rate=8000 only; got encoding={query.get('encoding')} "
                f"sample_rate={query.get('sample_rate')}."
            )
        elif query.get("channels", "1") != "1":
            error = bad_request("Bad Request: this server transcribes one channel only.")
        elif _endpointing(query) == "bad":
            error = bad_request(f"Bad Request: invalid endpointing {query['endpointing']!r}.")
        if error is not None:
            self.refused.append(Refusal(trio.current_time(), error.status, query, headers))
            await _refuse(scope, send, error)
            return
        listener = Listener(query, headers, str(uuid.uuid4()), trio.current_time())
        accept: dict[str, Any] = {
            "type": "websocket.accept",
            "headers": encode_headers({"dg-request-id": listener.request_id}),
        }
        if subprotocols[:1] == ["token"]:
            accept["subprotocol"] = "token"
        await send(accept)
        self.listeners.append(listener)
        self._listener_added.set()
        self._listener_added = trio.Event()
        session = _Session(self, listener, receive, send)
        self._sessions.add(session)
        try:
            await session.run()
        finally:
            self._sessions.discard(session)


def _endpointing(query: dict[str, str]) -> int | None | str:
    """The endpointing in ms; None when turned off; "bad" when it is neither."""
    value = query.get("endpointing")
    if value is None:
        return DEFAULT_ENDPOINTING_MS
    if value.lower() == "false":
        return None
    if value.lower() == "true":
        return DEFAULT_ENDPOINTING_MS
    return int(value) if value.isdigit() else "bad"


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "false").lower() == "true"


async def _refuse(scope: Scope, send: Send, error: DeepgramError) -> None:
    """A refused handshake as Deepgram refuses it: an HTTP response with the status and error
    body, and the error repeated in ``dg-error`` for clients that only see headers."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})  # the best a server can do
        return
    body = json.dumps(error.body).encode()
    headers = {
        "content-type": "application/json",
        "content-length": str(len(body)),
        "dg-error": str(error.body["err_msg"]),
        **error.headers,
    }
    await send(
        {
            "type": "websocket.http.response.start",
            "status": error.status,
            "headers": encode_headers(headers),
        }
    )
    await send({"type": "websocket.http.response.body", "body": body})


def wav_header(size: int) -> bytes:
    """A WAV header for ``size`` bytes of 8 kHz mono µ-law (format 7): Deepgram's default
    container."""
    fmt = struct.pack("<HHIIHH", 7, 1, audio.SAMPLE_RATE, audio.SAMPLE_RATE, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(fmt) + 8 + size)
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", size)
    )


class _Session:
    """One accepted listening connection: reads audio and control messages, finds speech,
    and sends results in order: finals (and UtteranceEnd) through one queue, so a slow
    transcription never reorders them; SpeechStarted and interim results at once."""

    def __init__(self, server: FakeDeepgram, listener: Listener, receive: Receive, send: Send):
        self.server = server
        self.listener = listener
        self._receive = receive
        self._send_asgi = send
        query = listener.query
        self.vad_events = _flag(query, "vad_events")
        interim = server.interim_interval if _flag(query, "interim_results") else None
        utterance_end = query.get("utterance_end_ms", "")
        endpointing = _endpointing(query)
        self.segmenter = Segmenter(
            endpointing if isinstance(endpointing, int) else None,
            int(utterance_end) if utterance_end.isdigit() else None,
            interim,
        )
        self.model = query.get("model", "general")
        self._send_lock = trio.Lock()
        self._closed = False
        self._stopping = False  # CloseStream received: no more audio is read
        self._last_activity = trio.current_time()
        self._activity = trio.Event()
        self._dropped: tuple[int, str] | None = None
        self._drop = trio.Event()
        self._queue_in, self._queue_out = trio.open_memory_channel[Any](float("inf"))
        self._window_end = 0.0  # where the last final result's window ended
        self._finalised = 0  # the number of the last utterance a final result was sent for
        self._interim_busy = False
        self._nursery: trio.Nursery | None = None

    def drop(self, code: int, reason: str) -> None:
        if self._dropped is None:
            self._dropped = (code, reason)
            self._drop.set()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._read)
            nursery.start_soon(self._watch_idle)
            nursery.start_soon(self._deliver)
            nursery.start_soon(self._watch_drop)

    # ------------------------------------------------------------ reading

    async def _read(self) -> None:
        while True:
            message = await self._receive()
            now = trio.current_time()
            if message["type"] == "websocket.disconnect":
                self._mark_closed(message.get("code", 1005), "client")
                return
            if self._stopping:
                continue
            data = message.get("bytes")
            if data is not None:
                if not data:  # Deepgram's legacy close: an empty binary message
                    await self._close_stream()
                    continue
                self.listener.audio.append((now, bytes(data)))
                self._active(now)
                for event in self.segmenter.feed(bytes(data)):
                    await self._handle(event)
                continue
            text = message.get("text") or ""
            try:
                control: Any = json.loads(text)
            except ValueError:
                control = text
            self.listener.controls.append((now, control))
            kind = control.get("type") if isinstance(control, dict) else None
            if kind == "KeepAlive":
                self.listener.keepalives.append(now)
                self._active(now)
            elif kind == "Finalize":
                await self._queue_in.send(self.segmenter.flush(from_finalize=True))
            elif kind == "CloseStream":
                await self._close_stream()

    def _active(self, now: float) -> None:
        self._last_activity = now
        self._activity.set()
        self._activity = trio.Event()

    async def _handle(self, event: Any) -> None:
        if isinstance(event, SpeechStarted):
            if self.vad_events:
                await self._send(
                    {"type": "SpeechStarted", "channel": [0, 1], "timestamp": round(event.at, 3)}
                )
        elif isinstance(event, InterimDue):
            if not self._interim_busy and self._nursery is not None:
                self._interim_busy = True
                self._nursery.start_soon(self._interim, event.utterance)
        else:  # Endpoint, UtteranceEnd: in order, behind the finals before them
            await self._queue_in.send(event)

    async def _close_stream(self) -> None:
        """Flush what was heard, then (in order) Metadata and a normal close."""
        self._stopping = True
        if self.segmenter.in_speech:
            await self._queue_in.send(self.segmenter.flush(from_finalize=False))
        await self._queue_in.send("close")

    # ------------------------------------------------------------ results

    async def _transcribe(self, utterance: Utterance) -> str:
        if not utterance.audio:
            return ""
        transcriber = self.server.transcriber or audio.transcribe
        return await trio.to_thread.run_sync(transcriber, utterance.audio, abandon_on_cancel=True)

    async def _interim(self, utterance: Utterance) -> None:
        try:
            transcript = await self._transcribe(utterance)
            async with self._send_lock:  # checked and sent at once: never after its final
                if self._finalised < utterance.number:
                    window_start = self._window_end
                    message = self._results(
                        transcript, utterance, window_start, is_final=False, speech_final=False
                    )
                    await self._send_locked(message)
        finally:
            self._interim_busy = False

    async def _deliver(self) -> None:
        async for item in self._queue_out:
            if item == "close":
                await self._send(self._metadata())
                await self._close(1000, "")
                return
            if isinstance(item, UtteranceEnd):
                end = round(item.last_word_end, 3)
                await self._send({"type": "UtteranceEnd", "channel": [0, 1], "last_word_end": end})
                continue
            transcript = await self._transcribe(item.utterance)
            if self.server.final_delay:
                await trio.sleep(self.server.final_delay)
            message = self._results(
                transcript,
                item.utterance,
                self._window_end,
                is_final=True,
                speech_final=item.speech_final,
                from_finalize=item.from_finalize,
            )
            async with self._send_lock:
                self._finalised = item.utterance.number
                self._window_end = item.utterance.end
                await self._send_locked(message)

    def _results(
        self,
        transcript: str,
        utterance: Utterance,
        window_start: float,
        *,
        is_final: bool,
        speech_final: bool,
        from_finalize: bool = False,
    ) -> dict[str, Any]:
        """A ``Results`` message covering the audio from ``window_start`` to the utterance's
        end, its words spread evenly over the voiced part."""
        words = transcript.split()
        span = max(utterance.speech_end - utterance.speech_start, 0.0)
        step = span / len(words) if words else 0.0
        confidence = 0.9 if words else 0.0
        timed = [
            {
                "word": word,
                "start": round(utterance.speech_start + i * step, 3),
                "end": round(utterance.speech_start + (i + 1) * step, 3),
                "confidence": confidence,
                "punctuated_word": word,
            }
            for i, word in enumerate(words)
        ]
        return {
            "type": "Results",
            "channel_index": [0, 1],
            "duration": round(utterance.end - window_start, 3),
            "start": round(window_start, 3),
            "is_final": is_final,
            "speech_final": speech_final,
            "channel": {
                "alternatives": [
                    {"transcript": transcript, "confidence": confidence, "words": timed}
                ]
            },
            "metadata": {
                "request_id": self.listener.request_id,
                "model_info": {"name": self.model, "version": "2024-01-09.29447", "arch": "nova"},
                "model_uuid": MODEL_UUID,
            },
            "from_finalize": from_finalize,
        }

    def _metadata(self) -> dict[str, Any]:
        received = self.listener.audio_bytes
        created = datetime.datetime.fromtimestamp(self.listener.opened_at, datetime.UTC)
        return {
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": self.listener.request_id,
            "sha256": hashlib.sha256(received).hexdigest(),
            "created": created.isoformat().replace("+00:00", "Z"),
            "duration": round(len(received) / audio.SAMPLE_RATE, 3),
            "channels": 1,
            "models": [MODEL_UUID],
            "model_info": {
                MODEL_UUID: {"name": self.model, "version": "2024-01-09.29447", "arch": "nova"}
            },
        }

    # ------------------------------------------------------------ closing

    async def _watch_idle(self) -> None:
        timeout = self.server.idle_timeout
        while True:
            deadline = self._last_activity + timeout
            with trio.move_on_at(deadline):
                await self._activity.wait()
                continue
            if self._stopping:  # CloseStream: closing normally, however long that takes
                return
            if trio.current_time() >= self._last_activity + timeout:
                await self._close(1011, "NET-0001")
                return

    async def _watch_drop(self) -> None:
        await self._drop.wait()
        assert self._dropped is not None
        await self._close(*self._dropped)

    async def _send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            await self._send_locked(message)

    async def _send_locked(self, message: dict[str, Any]) -> None:
        if self._closed:
            return
        self.listener.sent.append((trio.current_time(), message))
        await self._send_asgi({"type": "websocket.send", "text": json.dumps(message)})

    async def _close(self, code: int, reason: str) -> None:
        async with self._send_lock:
            if not self._closed:
                await self._send_asgi({"type": "websocket.close", "code": code, "reason": reason})
                self._mark_closed(code, "server")

    def _mark_closed(self, code: int, by: str) -> None:
        if not self._closed:
            self._closed = True
            self.listener.closed_at = trio.current_time()
            self.listener.close_code = code
            self.listener.closed_by = by
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
