"""One phone call, run: the media stream's bytes in and out, and the effects of the call's
state machine (``ragcore.voice.call``) carried out.

Everything a call starts lives in the call's nursery and ends with it: the reader of the
provider's socket, its writer, a 20 ms ticker, the speech-to-text stream, a watch for the
service's stop (which closes the call politely), and each turn's answer and speech work
(a turn has a cancel scope of its own, so a barge-in stops its model call and its
synthesis at once and nothing else). Feeding the machine is synchronous: effects that
need I/O are handed to the task that does it through memory channels, so the order the
machine chose is the order on the wire.

A call handed to a person is put through by the provider's Calls API (``TransferCall``:
the call's markup replaced with ``<Dial>``); the provider then ends the media stream.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import aclosing
from functools import partial
from typing import Any

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from ragcore.channels.routing import default_role
from ragcore.chat import history
from ragcore.chat.pipeline import ChatRequest
from ragcore.chat.turn import TurnRequest, take_turn
from ragcore.employees.roles import Role
from ragcore.voice import media
from ragcore.voice.audio import FRAME_BYTES, FRAME_SECONDS, frames
from ragcore.voice.call import (
    TRANSFERRED_REASON,
    Answered,
    AnswerNotGiven,
    AnswerPiece,
    Ask,
    Call,
    CallEvent,
    Cancel,
    Confirm,
    Ended,
    Finalize,
    FinishTurn,
    HangUp,
    Inbound,
    KeepListening,
    KeyPressed,
    Listen,
    ListenerFailed,
    MarkPlayed,
    SendAudio,
    SendClear,
    SendMark,
    Speak,
    SpeechAudio,
    SpeechDone,
    SpeechFailed,
    Started,
    State,
    Stopping,
    Tick,
    Transcript,
    TransferCall,
    TransferFailed,
    Transferred,
    UnexpectedEvent,
    finish_within,
)
from ragcore.voice.greeting import greeting
from ragcore.voice.phrases import call_language
from ragio import tracing
from ragio.channels import outbound
from ragio.chat import conversations
from ragio.chat.policy import chat_policy
from ragio.employees.profile import get_profile
from ragio.employees.store import list_roles
from ragio.runner import run
from ragio.service import Service
from ragio.voice import calls
from voiceio.speech import Deepgram, SpeechError
from voiceio.vad import SpeechDetector

log = logging.getLogger(__name__)
#: how long the provider has, once connected, to say which call this is
START_SECONDS = 10.0
#: caller audio waiting for speech-to-text (5 s); beyond it, the oldest is dropped
LISTEN_BACKLOG = 250
LISTENER_RETRY_SECONDS = (0.2, 1.0, 3.0)
RECORD_SECONDS = 5.0
#: the provider has this long to take a call to put through (retries included); past it,
#: the caller is told and leaves a message instead
TRANSFER_SECONDS = 15.0
_KEEP_ALIVE = b""  # in the listener's queue: send KeepAlive, not audio
_FINALIZE = b"F"  # in the listener's queue: send Finalize (audio is whole frames)


@attrs.define
class TurnWork:
    scope: trio.CancelScope
    speak: trio.MemorySendChannel[tuple[int, str]]
    #: set when the turn is no longer tentative: its answer's writes wait for it
    confirmed: trio.Event


class PhoneCall:
    """The running call: ``run`` returns when the call is over."""

    def __init__(self, service: Service, speech: Deepgram, socket: WebSocketConnection) -> None:
        self.service = service
        self.speech = speech
        self.socket = socket
        self.call: Call | None = None
        self.role: Role | None = None
        self.detector = SpeechDetector()
        self._began = trio.current_time()
        self._nursery: trio.Nursery | None = None
        self._out_send, self._out_receive = trio.open_memory_channel[str](math.inf)
        self._listen_send, self._listen_receive = trio.open_memory_channel[bytes](LISTEN_BACKLOG)
        self._turns: dict[int, TurnWork] = {}
        self._dropped_audio = 0
        self._hung_up: str | None = None  # why this side ended the call
        self._unexpected: set[tuple[State, type]] = set()  # (state, event type) logged
        self._transfer_done: trio.Event | None = None  # set when the provider answered
        # the caller's words heard (ns, for the trace): since when, and the last utterance
        self._hearing_since: int | None = None
        self._heard: tuple[int, int] | None = None

    def now(self) -> float:
        return trio.current_time() - self._began

    async def run(self) -> None:
        with tracing.use(self.service.tracing.tracer):  # each turn a trace (_run_turn)
            await self._run()

    async def _run(self) -> None:
        start = await self._await_start()
        if start is None:
            return
        said, language = await self._greeting()
        self.role = await self._role()
        role = self.role.identifier if self.role else None
        before = await self._record(
            calls.begin_call, start.call_sid, start.stream_sid, start.caller, role
        )
        self.call = Call(
            said,
            asked_before=before or 0,
            language=language,
            transfer_to=self.service.settings.voice_transfer_number,
        )
        reason = "stopped"
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._write)
                nursery.start_soon(self._tick)
                nursery.start_soon(self._listen)
                self.feed(Started(start.stream_sid, start.call_sid, start.caller, self.now()))
                nursery.start_soon(self._stop_when_the_service_stops)
                reason = await self._read()
                if self._transfer_done is not None:
                    # the provider may end the stream before it answers the transfer
                    with trio.move_on_after(TRANSFER_SECONDS):
                        await self._transfer_done.wait()
                if self.call.transferred is not None:
                    reason = TRANSFERRED_REASON
                self.feed(Ended(reason, self.now()))
                nursery.cancel_scope.cancel()
        finally:
            if reason == "stopped" and self.service.stopping.is_set():
                reason = "the service stopped before the call could be closed"
            await self._record(calls.end_call, start.call_sid, reason)
            if self._dropped_audio:
                log.warning(
                    "call %s: %d frames of caller audio were dropped: speech-to-text fell behind",
                    start.call_sid,
                    self._dropped_audio,
                )

    # ------------------------------------------------------------ the machine

    def feed(self, event: CallEvent) -> None:
        """Give the machine ``event`` and carry out its effects, in order, at once. An event
        the machine did not expect is dropped, logged once a call for its state and type:
        the call goes on as it was."""
        assert self.call is not None
        try:
            effects = self.call.receive(event)
        except UnexpectedEvent as unexpected:
            seen = (unexpected.state, type(event))
            if seen not in self._unexpected:
                self._unexpected.add(seen)
                log.warning("call %s: %s; dropped", self._sid(), unexpected)
            return
        for effect in effects:
            self._carry_out(effect)

    def _carry_out(self, effect: Any) -> None:
        assert self.call is not None and self._nursery is not None
        sid = self.call.stream_sid
        match effect:
            case SendAudio(audio=audio):
                self._out_send.send_nowait(media.media_message(sid, audio))
            case SendMark(name=name):
                self._out_send.send_nowait(media.mark_message(sid, name))
            case SendClear():
                self._out_send.send_nowait(media.clear_message(sid))
            case Listen(audio=audio):
                self._to_listener(audio)
            case KeepListening():
                self._to_listener(_KEEP_ALIVE)
            case Finalize():
                self._to_listener(_FINALIZE)
            case Ask(turn=turn, question=question, asked=asked, tentative=tentative):
                self._begin_turn(turn, (question, asked), tentative=tentative)
            case Confirm(turn=turn):
                if turn in self._turns:
                    self._turns[turn].confirmed.set()
            case Speak(turn=turn, part=part, text=text):
                work = self._turns.get(turn) or self._begin_turn(turn, None)
                work.speak.send_nowait((part, text))
            case Cancel(turn=turn):
                if turn in self._turns:
                    self._turns.pop(turn).scope.cancel()
            case FinishTurn(record=record):
                # the turn of the call's conversation its answer recorded (or, never
                # answered, is recorded now): how it ended, and its stage timings
                kept = record.in_conversation(self.call.call_sid, self.call.caller)
                retention = self.service.settings.conversation_retention_days
                finish = partial(conversations.finish_turn, retention_days=retention)
                self._nursery.start_soon(self._record, finish, kept, record.stages)
            case HangUp(reason=reason):
                log.info("call %s: hanging up: %s", self.call.call_sid, reason)
                self._hung_up = reason
                self._nursery.start_soon(self._hang_up)
            case TransferCall(number=number):
                self._transfer_done = trio.Event()
                self._nursery.start_soon(self._transfer, number, self._transfer_done)
            case _:
                raise TypeError(f"no way to carry out {effect!r}")

    # ------------------------------------------------------------ the provider's socket

    async def _await_start(self) -> media.StreamStart | None:
        """The ``start`` event (after ``connected``); None when the stream ends first."""
        with trio.move_on_after(START_SECONDS):
            while True:
                try:
                    event = media.parse_message(await self._text())
                except (ConnectionClosed, media.BadMessage) as error:
                    log.info("a media stream ended before it started: %s", error)
                    return None
                if isinstance(event, media.StreamStart):
                    return event
                if isinstance(event, media.StreamStop):
                    return None
        log.info("a media stream sent no start event in %s s", START_SECONDS)
        await self.socket.aclose(code=1008, reason="no start event")
        return None

    async def _text(self) -> str:
        message = await self.socket.get_message()
        if not isinstance(message, str):
            raise media.BadMessage("a binary frame; the media stream sends JSON text")
        return message

    async def _read(self) -> str:
        """Feed the machine what the provider sends; the reason the stream ended."""
        try:
            while True:
                event = media.parse_message(await self._text())
                match event:
                    case media.StreamMedia(audio=audio):
                        for frame in frames(audio) if len(audio) != FRAME_BYTES else (audio,):
                            speech = self.detector.is_speech(frame)
                            self.feed(Inbound(frame, speech, self.now()))
                    case media.StreamMark(name=name):
                        self.feed(MarkPlayed(name, self.now()))
                    case media.StreamDigit(digit=digit):
                        self.feed(KeyPressed(digit, self.now()))
                    case media.StreamStop():
                        return "the caller hung up"
        except ConnectionClosed:
            return self._hung_up or "the media stream closed"
        except media.BadMessage as error:
            log.warning("call %s: ending it on a message out of protocol: %s", self._sid(), error)
            await self.socket.aclose(code=1002, reason="protocol error")
            return "protocol error"

    async def _write(self) -> None:
        async for message in self._out_receive:
            try:
                await self.socket.send_message(message)
            except ConnectionClosed:
                return

    async def _tick(self) -> None:
        """Tick the machine every 20 ms on a fixed schedule; a late tick does not burst."""
        due = trio.current_time()
        while True:
            due += FRAME_SECONDS
            await trio.sleep_until(due)
            late = trio.current_time() - due
            if late > 5 * FRAME_SECONDS:
                due = trio.current_time()
            self.feed(Tick(self.now()))

    async def _stop_when_the_service_stops(self) -> None:
        """On a stop (SIGTERM), end the call politely within SHUTDOWN_GRACE_SECONDS: the
        sentence under way finished while there is time for it, then the closing words."""
        await self.service.stopping.wait()
        now = self.now()
        finish = finish_within(self.service.settings.shutdown_grace_seconds)
        log.info("call %s: the service is stopping: closing the call", self._sid())
        self.feed(Stopping(now + finish, now))

    async def _transfer(self, number: str, done: trio.Event) -> None:
        """Put the call through to ``number``: the provider's call update with ``<Dial>``
        markup (its Calls API), within TRANSFER_SECONDS. The number is not logged."""
        assert self.call is not None
        settings = self.service.settings
        path = media.call_path(settings.telco_account_sid, self.call.call_sid)
        form = {"Twiml": media.dial(number)}
        auth = (settings.telco_account_sid, settings.telco_auth_token)
        try:
            with trio.fail_after(TRANSFER_SECONDS):
                await outbound.call(
                    self.service.outbound,
                    "voice",
                    "POST",
                    settings.telco_api_base_url + path,
                    data=form,
                    auth=auth,
                )
        except (outbound.SendFailed, trio.TooSlowError) as error:
            reason = str(error) if isinstance(error, outbound.SendFailed) else "timed out"
            log.warning("call %s: could not put it through to a person: %s", self._sid(), reason)
            self.feed(TransferFailed(reason, self.now()))
        else:
            log.info("call %s: the provider puts it through to a person", self._sid())
            self.feed(Transferred(self.now()))
        finally:
            done.set()

    async def _hang_up(self) -> None:
        """End the call: closing the stream ends a ``<Connect><Stream>`` call."""
        await self.socket.aclose(code=1000, reason="goodbye")

    # ------------------------------------------------------------ speech-to-text

    def _to_listener(self, audio: bytes) -> None:
        try:
            self._listen_send.send_nowait(audio)
        except trio.WouldBlock:
            self._dropped_audio += 1

    async def _listen(self) -> None:
        """Keep one recognition stream open for the whole call, reopening a lost one."""
        failures = 0
        while True:
            try:
                async with self.speech.listen() as listener, trio.open_nursery() as pumps:
                    pumps.start_soon(self._pump_audio, listener)
                    async for heard in listener.results():
                        failures = 0
                        self._note_heard(heard.final and (heard.ends_utterance or heard.finalized))
                        self.feed(
                            Transcript(
                                heard.text,
                                heard.final,
                                heard.ends_utterance,
                                self.now(),
                                heard.finalized,
                            )
                        )
            except* SpeechError as group:
                error = group.exceptions[0]
                log.warning("call %s: %s", self._sid(), error)
                self.feed(ListenerFailed(str(error), self.now()))
            pause = LISTENER_RETRY_SECONDS[min(failures, len(LISTENER_RETRY_SECONDS) - 1)]
            failures += 1
            await trio.sleep(pause)

    def _note_heard(self, utterance_ended: bool) -> None:
        """When the caller's words began to be transcribed, and when their utterance's
        final transcript came: the speech-to-text span of the turn it asks."""
        if self._hearing_since is None:
            self._hearing_since = tracing.now_ns()
        if utterance_ended:
            self._heard = (self._hearing_since, tracing.now_ns())
            self._hearing_since = None

    async def _pump_audio(self, listener: Any) -> None:
        async for audio in self._listen_receive:
            try:
                if not audio:  # _KEEP_ALIVE
                    await listener.keep_alive()
                elif audio is _FINALIZE:
                    await listener.finalize()
                else:
                    await listener.send_audio(audio)
            except ConnectionClosed:
                return  # results() reports the loss

    # ------------------------------------------------------------ turns

    def _begin_turn(
        self, turn: int, question: tuple[str, int] | None, *, tentative: bool = False
    ) -> TurnWork:
        """A turn's work in a scope of its own; the turns before it are over. ``question``:
        the question to answer and its number in the call (None: scripted words). A
        ``tentative`` turn's answer holds its writes until the turn is confirmed."""
        assert self._nursery is not None
        for old in self._turns.values():
            old.scope.cancel()
        self._turns.clear()
        send, receive = trio.open_memory_channel[tuple[int, str]](math.inf)
        confirmed = trio.Event()
        if not tentative:
            confirmed.set()
        work = TurnWork(trio.CancelScope(), send, confirmed)
        self._turns[turn] = work
        self._nursery.start_soon(self._run_turn, turn, question, work, receive)
        return work

    async def _run_turn(
        self,
        turn: int,
        question: tuple[str, int] | None,
        work: TurnWork,
        sentences: trio.MemoryReceiveChannel[tuple[int, str]],
    ) -> None:
        heard, self._heard = (self._heard, None) if question is not None else (None, None)
        attributes = {"ragchat.channel": "voice", "ragchat.call.turn": turn}
        with work.scope, tracing.root_span("voice_turn", heard[0] if heard else None, attributes):
            if heard is not None:  # the caller's question, transcribed
                tracing.timed_span("speech_to_text", *heard)
            async with trio.open_nursery() as nursery:
                if question is not None:
                    nursery.start_soon(self._answer, turn, *question, work)
                nursery.start_soon(self._say, turn, sentences)

    async def _answer(self, turn: int, question: str, asked: int, work: TurnWork) -> None:
        caller = self.call.caller if self.call else ""
        # the call is a conversation: a follow-up is read with the turns before it
        sid = self.call.call_sid if self.call is not None else ""
        request = ChatRequest(
            question,
            employee=self.role,
            asker=f"voice:{caller}",
            spoken=True,
            channel="voice",
            user_identifier=caller or None,  # {caller}: the caller's number
        )
        place = history.place_key("voice", sid) if sid else None
        # recorded as the conversation's turn ``asked``, which the call's end of it finishes
        kept = TurnRequest(request, "voice", caller, place=place, idle_minutes=0, turn=asked)

        async def piece(text: str) -> None:
            self.feed(AnswerPiece(turn, text, self.now()))

        policy = chat_policy(self.service)
        try:
            outcome = await run(
                take_turn(kept, policy), self.service, on_delta=piece, hold=work.confirmed
            )
        except Exception as error:  # every failure is said as an apology; the call goes on
            log.warning("call %s: answering failed: %s", self._sid(), error, exc_info=True)
            self.feed(AnswerNotGiven(turn, f"{type(error).__name__}: {error}", self.now()))
            return
        for failure in outcome.failures:  # the caller has their answer; the log says it
            log.warning("call %s: its conversation: %s", self._sid(), failure, exc_info=failure)
        self.feed(Answered(turn, outcome.answer, self.now()))

    async def _say(self, turn: int, sentences: trio.MemoryReceiveChannel[tuple[int, str]]) -> None:
        """Synthesize the turn's sentences in order, each streamed as it arrives."""
        async for part, text in sentences:
            try:
                with tracing.span("text_to_speech", **{"ragchat.characters": len(text)}):
                    async with aclosing(self.speech.synthesize(text)) as audio:
                        async for chunk in audio:
                            self.feed(SpeechAudio(turn, part, chunk, self.now()))
            except SpeechError as error:
                log.warning("call %s: %s", self._sid(), error)
                self.feed(SpeechFailed(turn, part, str(error), self.now()))
                return
            self.feed(SpeechDone(turn, part, self.now()))

    # ------------------------------------------------------------ the record

    async def _greeting(self) -> tuple[str, str]:
        """The call's first words, and the language it speaks until the caller has:
        VOICE_LANGUAGE's, else the business profile's, else DEFAULT_LANGUAGE's."""
        settings = self.service.settings
        profile = await self._database(get_profile)
        language = call_language(
            settings.voice_language,
            profile.language if profile is not None else None,
            settings.default_language,
        )
        said = greeting(settings.voice_greeting, settings.voice_bot_name, profile, language)
        return said, language

    async def _role(self) -> Role | None:
        """The role whose channels include ``voice`` (``support`` first); never an
        internal role (``ragcore.channels.routing``)."""
        stored = await self._database(list_roles)
        return default_role([s.role for s in stored], "voice") if stored else None

    async def _database(self, function: Callable[..., Any], *args: Any) -> Any:
        try:
            return await self.service.database.run(function, *args)
        except Exception:
            log.exception("call %s: the database failed", self._sid())
            return None

    async def _record(self, function: Callable[..., Any], *args: Any) -> Any:
        """Keep the call's record, even as the call ends around it (shielded, for at most
        RECORD_SECONDS); a failure is logged (None) and the call goes on."""
        with trio.CancelScope(shield=True, deadline=trio.current_time() + RECORD_SECONDS):
            return await self._database(function, *args, self.service.clock.now())
        return None  # past RECORD_SECONDS

    def _sid(self) -> str:
        return self.call.call_sid if self.call is not None and self.call.call_sid else "?"
