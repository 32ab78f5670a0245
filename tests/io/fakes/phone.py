"""A fake phone call as the telephony provider streams it: a real WebSocket client speaking the
provider's Media Streams wire format (Twilio's) to the service's stream URL.

    async with phone_call(url, auth_token=TOKEN, parameters={"caller": CALLER}) as call:
        await call.say(audio.speak("How long do I have to return an item"))
        await call.wait_for_audio(10)

On connecting it sends ``connected`` and ``start``, then one ``media`` message every 20 ms, in
real time, for as long as the call lasts, as a phone line does: 160 bytes of µ-law silence
while the caller says nothing, the caller's speech when ``say`` is called (``pause`` sends
silence on purpose; cancelling a ``say`` cuts the caller off mid-sentence). Frames go out on
a schedule (``trio.sleep_until``), so a late wake-up sends the frames it owes at once instead
of drifting. The upgrade request is signed as the
provider signs it: ``X-Twilio-Signature``, the provider's own ``RequestValidator`` over the
stream URL with no parameters (``sign="forged"`` signs with a wrong token, ``"none"`` sends no
header). A refused upgrade raises trio_websocket's ``ConnectionRejected`` (re-exported here)
with the status the service answered.

What the service sends back is played as the provider plays it: ``media`` audio is queued and
played in real time (160 bytes per 20 ms) from when it arrives; a ``mark`` is answered with a
``mark`` of the same name when playback reaches it; ``clear`` empties the queue at once and
answers every pending mark at once. ``heard`` is every byte of audio received, ``played`` what
actually played, with when. Anything the provider would not accept (a wrong ``streamSid``, an
unknown event, a payload that is not base64) is listed in ``violations``.

With ``echo_db`` set, the line echoes: what plays comes back on the inbound track
``echo_delay_ms`` later, ``echo_db`` dB quieter, mixed with whatever the caller is saying, as
a handset and the line do.

Everything the call starts runs in a nursery the context manager owns; leaving the block
ends it all (and closes the socket, without ``stop``, if ``hang_up`` was not called).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import attrs
import numpy as np
import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)
from twilio.request_validator import RequestValidator

from tests.io import audio

__all__ = ["ConnectionRejected", "HandshakeError", "PhoneCall", "phone_call"]

FRAME_SECONDS = audio.FRAME_BYTES / audio.SAMPLE_RATE  # 0.02
SILENT_FRAME = audio.silence(20)
Signing = Literal["valid", "none", "forged"]


def sid(prefix: str) -> str:
    """A provider identifier: two letters and 32 hex digits."""
    return prefix + secrets.token_hex(16)


@attrs.frozen
class Received:
    """A message from the service, parsed when it is JSON, with ``trio.current_time()`` on
    arrival."""

    at: float
    message: Any


@attrs.frozen
class Played:
    """Audio that played: ``audio`` started playing at ``at`` and lasted ``len(audio) / 8000``
    seconds."""

    at: float
    audio: bytes = attrs.field(repr=lambda value: f"<{len(value)} bytes>")


@attrs.frozen
class MarkReturned:
    """A ``mark`` sent back to the service: when, and whether a ``clear`` sent it early."""

    at: float
    name: str
    cleared: bool


@attrs.define
class _Mark:
    name: str


class PhoneCall:
    """The call in progress; made by ``phone_call``."""

    def __init__(
        self,
        socket: WebSocketConnection,
        *,
        account_sid: str,
        call_sid: str,
        stream_sid: str,
        caller: str,
        parameters: dict[str, str],
        echo_db: float | None,
        echo_delay_ms: int,
    ) -> None:
        self.socket = socket
        self.account_sid = account_sid
        self.call_sid = call_sid
        self.stream_sid = stream_sid
        self.caller = caller
        self.parameters = parameters
        self.echo_db = echo_db
        self.echo_delay_ms = echo_delay_ms
        self.received: list[Received] = []
        self.sent: list[tuple[float, dict[str, Any]]] = []  # every message the phone sent
        self.played: list[Played] = []
        self.marks: list[MarkReturned] = []
        self.violations: list[str] = []
        self.ended = trio.Event()  # set when the socket closed, from either side
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self.started_at = 0.0  # trio time of ``start``: media timestamps count from it
        self._heard = bytearray()
        self._last_media_at: float | None = None
        self._sequence = 0
        self._chunk = 0
        self._send_lock = trio.Lock()
        # what the caller says, frame by frame: (frame, the utterance's event, its last frame?)
        self._caller_frames: deque[tuple[bytes, trio.Event, bool]] = deque()
        self._queue: deque[bytes | _Mark] = deque()  # what the service sent, to play
        self._queue_changed = trio.Event()
        self._media_arrived = trio.Event()
        self._playing: trio.CancelScope | None = None
        self._echo: deque[tuple[int, np.ndarray]] = deque()  # (first sample, samples) played
        self._hung_up = False
        self._tasks: trio.Nursery | None = None  # the call's own tasks, not the test's

    # ------------------------------------------------------------ what the test reads

    @property
    def heard(self) -> bytes:
        """Every byte of audio the service sent (``media`` payloads), in order."""
        return bytes(self._heard)

    @property
    def played_audio(self) -> bytes:
        """The audio that actually played, in order (``heard`` less what ``clear`` dropped)."""
        return b"".join(p.audio for p in self.played)

    def messages(self, event: str) -> list[Received]:
        """The messages received with this ``event``."""
        return [
            r
            for r in self.received
            if isinstance(r.message, dict) and r.message.get("event") == event
        ]

    # ------------------------------------------------------------ what the caller does

    async def say(self, mulaw: bytes) -> None:
        """Say ``mulaw`` (8 kHz µ-law) into the phone: returns when its last frame was sent,
        or the call ended. A partial last frame is padded with silence."""
        await self._queue_frames(mulaw)

    async def pause(self, ms: int) -> None:
        """Say nothing for ``ms``: the line keeps sending silence, as it always does."""
        await self._queue_frames(audio.silence(ms))

    async def press(self, digit: str) -> None:
        """Press a key: a ``dtmf`` event, between two media frames."""
        await self._send(
            {
                "event": "dtmf",
                "streamSid": self.stream_sid,
                "sequenceNumber": None,  # numbered when sent
                "dtmf": {"track": "inbound_track", "digit": digit},
            }
        )

    async def wait_for_audio(self, seconds: float, *, after: int = 0) -> None:
        """Until more than ``after`` bytes of audio have been heard (by default: any);
        raises TimeoutError. ``after=len(call.heard)`` waits for new audio."""
        with trio.move_on_after(seconds):
            while len(self._heard) <= after:
                if self.ended.is_set():
                    raise TimeoutError("the call ended before the service sent audio")
                await self._media_arrived.wait()
            return
        raise TimeoutError(f"no audio from the service within {seconds} s")

    async def wait_until_quiet(self, ms: int, timeout: float) -> None:
        """Until no audio has arrived for ``ms`` (counting from now, if none ever did);
        raises TimeoutError after ``timeout`` seconds."""
        quiet = ms / 1000
        with trio.move_on_after(timeout):
            since = trio.current_time()
            while True:
                last = self._last_media_at if self._last_media_at is not None else since
                deadline = max(last, since) + quiet
                if trio.current_time() >= deadline:
                    return
                with trio.move_on_at(deadline):
                    await self._media_arrived.wait()
        raise TimeoutError(f"the service kept sending audio for {timeout} s")

    async def wait_until_played(self, timeout: float) -> None:
        """Until everything queued has played (and its marks were returned)."""
        with trio.move_on_after(timeout):
            while (self._queue or self._playing is not None) and not self.ended.is_set():
                await self._queue_changed.wait()
            return
        raise TimeoutError(f"playback did not finish within {timeout} s")

    async def hang_up(self) -> None:
        """End the call as the provider does: ``stop``, then close the socket."""
        if self._hung_up or self.ended.is_set():
            return
        self._hung_up = True
        await self._send(
            {
                "event": "stop",
                "sequenceNumber": None,  # numbered when sent
                "streamSid": self.stream_sid,
                "stop": {"accountSid": self.account_sid, "callSid": self.call_sid},
            }
        )
        await self._close()

    async def drop(self) -> None:
        """Close the socket without ``stop``, as a call lost mid-way."""
        self._hung_up = True
        await self._close()

    # ------------------------------------------------------------ the line

    async def _begin(self) -> None:
        await self._send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        self.started_at = trio.current_time()
        await self._send(
            {
                "event": "start",
                "sequenceNumber": None,  # numbered when sent
                "start": {
                    "accountSid": self.account_sid,
                    "streamSid": self.stream_sid,
                    "callSid": self.call_sid,
                    "tracks": ["inbound"],
                    "customParameters": self.parameters,
                    "mediaFormat": {
                        "encoding": "audio/x-mulaw",
                        "sampleRate": audio.SAMPLE_RATE,
                        "channels": 1,
                    },
                },
                "streamSid": self.stream_sid,
            }
        )

    def _next_sequence(self) -> str:
        self._sequence += 1
        return str(self._sequence)

    async def _queue_frames(self, mulaw: bytes) -> None:
        if self.ended.is_set() or not mulaw:
            return
        frames = [
            mulaw[i : i + audio.FRAME_BYTES].ljust(audio.FRAME_BYTES, SILENT_FRAME[:1])
            for i in range(0, len(mulaw), audio.FRAME_BYTES)
        ]
        done = trio.Event()
        self._caller_frames.extend(
            (frame, done, number == len(frames)) for number, frame in enumerate(frames, 1)
        )
        try:
            await done.wait()  # set early when the call ends
        except BaseException:  # cancelled: the caller stops mid-sentence
            self._caller_frames = deque(f for f in self._caller_frames if f[1] is not done)
            raise

    async def _run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The call's tasks, in a nursery of their own: when the call ends they stop, and
        the test's code, which runs beside them, goes on."""
        async with trio.open_nursery() as tasks:
            self._tasks = tasks
            try:
                await self._begin()
                tasks.start_soon(self._read)
                tasks.start_soon(self._line)
                tasks.start_soon(self._play)
            finally:  # even when the service closed at once: the test sees an ended call
                task_status.started()

    async def _line(self) -> None:
        """One inbound media frame every 20 ms, on a schedule, until the call ends."""
        due = self.started_at
        while True:
            last: trio.Event | None = None
            if self._caller_frames:
                frame, done, final = self._caller_frames.popleft()
                last = done if final else None
            else:
                frame = SILENT_FRAME
            if self.echo_db is not None:
                frame = audio.mix(frame, self._echo_frame(due))
            self._chunk += 1
            await self._send(
                {
                    "event": "media",
                    "sequenceNumber": None,  # numbered when sent
                    "media": {
                        "track": "inbound",
                        "chunk": str(self._chunk),
                        "timestamp": str(round((due - self.started_at) * 1000)),
                        "payload": base64.b64encode(frame).decode("ascii"),
                    },
                    "streamSid": self.stream_sid,
                }
            )
            if last is not None:
                last.set()
            due += FRAME_SECONDS
            await trio.sleep_until(due)

    def _echo_frame(self, due: float) -> bytes:
        """What the handset picks up of the played audio in the frame sent at ``due`` (the
        20 ms before it): the samples that played ``echo_delay_ms`` earlier, quieter by
        ``echo_db``. Samples are counted from the start of the stream."""
        assert self.echo_db is not None
        delay = audio.SAMPLE_RATE * self.echo_delay_ms // 1000
        first = round((due - FRAME_SECONDS - self.started_at) * audio.SAMPLE_RATE) - delay
        samples = np.zeros(audio.FRAME_BYTES, dtype=np.float64)
        while self._echo and self._echo[0][0] + len(self._echo[0][1]) <= first:
            self._echo.popleft()  # played before this frame can hear it
        for start, played in self._echo:
            lo, hi = max(start, first), min(start + len(played), first + audio.FRAME_BYTES)
            if lo < hi:
                samples[lo - first : hi - first] += played[lo - start : hi - start]
        gain = 10.0 ** (self.echo_db / 20.0)
        return audio.pcm16_to_mulaw(np.clip(np.round(samples * gain), -32768, 32767))

    # ------------------------------------------------------------ what the service sends

    async def _read(self) -> None:
        while True:
            try:
                text = await self.socket.get_message()
            except ConnectionClosed as closed:
                self._ended(closed.reason)
                return
            now = trio.current_time()
            try:
                message: Any = json.loads(text)
            except (TypeError, ValueError):
                self.received.append(Received(now, text))
                self.violations.append(f"not a JSON text message: {text[:80]!r}")
                continue
            self.received.append(Received(now, message))
            if self._check_and_queue(message, now) == "clear":
                await self._clear()

    def _check_and_queue(self, message: Any, now: float) -> str | None:
        """Record a violation, or queue what plays; returns the event when it is valid."""
        if not isinstance(message, dict):
            self.violations.append(f"not a JSON object: {message!r:.80}")
            return None
        event = message.get("event")
        if event not in ("media", "mark", "clear"):
            self.violations.append(f"unknown event {event!r}")
            return None
        if message.get("streamSid") != self.stream_sid:
            self.violations.append(f"{event} for streamSid {message.get('streamSid')!r}")
            return None
        if event == "media":
            payload = (message.get("media") or {}).get("payload")
            try:
                data = base64.b64decode(payload, validate=True)
            except (TypeError, ValueError, binascii.Error):
                self.violations.append(f"media payload is not base64: {payload!r:.80}")
                return None
            self._heard += data
            self._last_media_at = now
            self._media_arrived.set()
            self._media_arrived = trio.Event()
            if data:
                self._enqueue(data)
        elif event == "mark":
            name = (message.get("mark") or {}).get("name")
            if not isinstance(name, str):
                self.violations.append(f"mark without a name: {message!r:.80}")
                return None
            self._enqueue(_Mark(name))
        return event

    def _enqueue(self, item: bytes | _Mark) -> None:
        self._queue.append(item)
        self._changed()

    def _changed(self) -> None:
        self._queue_changed.set()
        self._queue_changed = trio.Event()

    async def _clear(self) -> None:
        """Drop what has not played; answer its marks now, in order. The frame playing
        stops too."""
        pending = [item.name for item in self._queue if isinstance(item, _Mark)]
        self._queue.clear()
        if self._playing is not None:
            self._playing.cancel()
        self._changed()
        for name in pending:
            await self._return_mark(name, cleared=True)

    async def _return_mark(self, name: str, *, cleared: bool) -> None:
        self.marks.append(MarkReturned(trio.current_time(), name, cleared))
        await self._send(
            {
                "event": "mark",
                "sequenceNumber": None,  # numbered when sent
                "streamSid": self.stream_sid,
                "mark": {"name": name},
            }
        )

    async def _play(self) -> None:
        """Play the queue in real time: each step up to 160 bytes, for as long as they last,
        back to back while audio keeps coming (on a clock, not drifting); playback restarts
        when audio arrives after the queue ran dry. A mark is answered when reached."""
        clock = trio.current_time()
        while True:
            if not self._queue:
                while not self._queue:
                    await self._queue_changed.wait()
                clock = trio.current_time()
            item = self._queue.popleft()
            if isinstance(item, _Mark):
                self._changed()
                await self._return_mark(item.name, cleared=False)
                continue
            frame = self._frame_from(item)
            self.played.append(Played(clock, frame))
            if self.echo_db is not None:
                first = round((clock - self.started_at) * audio.SAMPLE_RATE)
                self._echo.append((first, audio.mulaw_to_pcm16(frame).astype(np.float64)))
            clock += len(frame) / audio.SAMPLE_RATE
            with trio.CancelScope() as self._playing:
                await trio.sleep_until(clock)
            if self._playing.cancelled_caught:  # cleared mid-frame
                clock = trio.current_time()
            self._playing = None
            if not self._queue:
                self._changed()

    def _frame_from(self, audio_item: bytes) -> bytes:
        """A frame of up to 160 bytes from the head of the queue: audio is a stream, so a
        frame may span two media messages (not a mark)."""
        frame = audio_item
        while len(frame) < audio.FRAME_BYTES and self._queue:
            following = self._queue[0]
            if isinstance(following, _Mark):
                break
            self._queue.popleft()
            frame += following
        if len(frame) > audio.FRAME_BYTES:
            self._queue.appendleft(frame[audio.FRAME_BYTES :])
        return frame[: audio.FRAME_BYTES]

    # ------------------------------------------------------------ plumbing

    async def _send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            if self.ended.is_set() or (self._hung_up and message["event"] != "stop"):
                return  # nothing follows ``stop``
            if "sequenceNumber" in message:  # numbered in the order they go out
                message["sequenceNumber"] = self._next_sequence()
            # shielded: a send cut off half-way would corrupt the stream for the close
            with trio.CancelScope(shield=True, deadline=trio.current_time() + 5):
                try:
                    await self.socket.send_message(json.dumps(message))
                except ConnectionClosed as closed:
                    self._ended(closed.reason)
                    return
            self.sent.append((trio.current_time(), message))

    async def _close(self) -> None:
        if not self.ended.is_set():
            await self.socket.aclose()
            self._ended(self.socket.closed)

    def _ended(self, reason: Any) -> None:
        """The socket closed: the call's tasks stop, a ``say`` in progress returns."""
        if self.ended.is_set():
            return
        if reason is not None:
            self.close_code, self.close_reason = reason.code, reason.reason
        self.ended.set()
        if self._tasks is not None:
            self._tasks.cancel_scope.cancel()
        for _, done, _ in self._caller_frames:
            done.set()
        self._caller_frames.clear()
        self._changed()
        self._media_arrived.set()


@asynccontextmanager
async def phone_call(
    url: str,
    *,
    auth_token: str,
    caller: str = "+15551234567",
    call_sid: str | None = None,
    account_sid: str | None = None,
    stream_sid: str | None = None,
    parameters: dict[str, str] | None = None,
    sign: Signing = "valid",
    signed_url: str | None = None,
    echo_db: float | None = None,
    echo_delay_ms: int = 120,
    connect_timeout: float = 10.0,
) -> AsyncIterator[PhoneCall]:
    """A call streamed to ``url`` (``ws://`` or ``wss://``); see the module's docstring.

    ``signed_url`` is the URL the provider was told to stream to, when the service sees
    another one (behind a proxy); the signature is computed over it (default: ``url``).
    ``parameters`` are the ``<Parameter>``s of the TwiML ``<Stream>``, sent in ``start``
    as ``customParameters``: the provider sends the caller's number only if the service's
    TwiML put it there; ``caller`` is kept on the call for the test. The SIDs are random
    unless given."""
    headers: list[tuple[bytes, bytes]] = []
    if sign != "none":
        token = auth_token if sign == "valid" else auth_token[::-1] + "forged"
        signature = RequestValidator(token).compute_signature(signed_url or url, {})
        headers.append((b"X-Twilio-Signature", signature.encode("ascii")))
    async with open_websocket_url(
        url, extra_headers=headers, connect_timeout=connect_timeout, disconnect_timeout=5
    ) as socket:
        call = PhoneCall(
            socket,
            account_sid=account_sid or sid("AC"),
            call_sid=call_sid or sid("CA"),
            stream_sid=stream_sid or sid("MZ"),
            caller=caller,
            parameters=dict(parameters or {}),
            echo_db=echo_db,
            echo_delay_ms=echo_delay_ms,
        )
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(call._run)
                try:
                    yield call
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # the call's own tasks end quietly; what is left is the test's own error
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
