"""A phone call as a state machine, in the h11 style: ``Call.receive(event)`` takes what
happened and returns the effects to run; voiceio only moves bytes and runs the effects.
Every transition is in ``TRANSITIONS`` at the bottom of this file, the events a state
ignores on purpose too: an event with no entry for the call's state is a mistake of
whoever fed it, and ``receive`` raises ``UnexpectedEvent`` (the runner logs it and goes
on). A turn's late news (the events of a turn no longer under way) is dropped before the
table is looked at.

Time is the call's own clock (seconds since the stream started), carried by each event;
voiceio ticks the call every 20 ms (``Tick``) so it can pace its audio and notice silence.

How a call goes:

- The stream starts; the greeting is said (a *turn* with no question).
- The caller speaks; their audio goes to speech-to-text. When the provider says the
  utterance has ended, the question is asked (``Ask``): the answer's text comes back in
  pieces, is cut into sentences (``ragcore.voice.speech``), and each sentence is
  synthesized (``Speak``) as soon as it is whole.
- The question is asked early, tentatively: after ``FINALIZE_SECONDS`` of the caller's
  silence the provider is told to finalize what it heard (``Finalize``), and its answer
  is asked at once, so the answer is under way while the silence grows to the provider's
  endpointing. Nothing of a tentative turn is sent to the caller, and its work does
  nothing others see (the runner holds those effects), until the silence has lasted
  ``ENDPOINT_SECONDS`` (``Confirm``); the caller speaking again before then withdraws it
  (``Cancel``, nothing recorded), and what they said is the start of their question.
- Audio is sent in 20 ms frames, paced at most ``LEAD_SECONDS`` ahead of playback, with a
  mark after each sentence: the provider returns a mark when the audio before it has
  played, so the call knows what the caller has actually heard.
- Caller speech while a turn is under way, loud enough not to be the bot's own echo
  (``ragcore.voice.echo``), is a barge-in: ``clear`` the provider's queue, cancel the
  turn's model and speech work, and listen. While the bot's audio can come back as echo,
  the caller's line is not sent to speech-to-text at all, so echo is never transcribed.
- Silence is asked about once, then the call is closed politely; a failed answer or
  speech is apologised for and the call goes on; a hang-up ends every turn.
- When the service stops (``Stopping``), the caller hears the sentence under way to its
  end (or, while an answer is being written, its first sentence), by ``finish_by`` at the
  latest, then ``SHUTTING_DOWN``, and the call is hung up. Nothing more is asked, and
  neither speech nor a key interrupts these last words.
- Human handoff (docs/handoff.md): an answer in the ``human`` mode hands the call to a
  person. With a number to put it through to (VOICE_TRANSFER_NUMBER), once the caller
  has heard that answer (its marks came back) the call is transferred (``TransferCall``):
  the provider takes the call, and its media stream ends. Without one, or when the
  transfer fails (the caller is told), the call goes on as a message box: each later
  utterance is asked as usual, comes back ``held`` (recorded for the person), and is
  acknowledged with ``MESSAGE_TAKEN`` instead of an answer.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from typing import Any, TypeAlias

import attrs

from ragcore.chat import history
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.voice import phrases
from ragcore.voice.audio import FRAME_BYTES, FRAME_SECONDS, SILENT_BYTE, level_db
from ragcore.voice.deepgram import ENDPOINTING_MS, UTTERANCE_END_MS
from ragcore.voice.echo import EchoGuard
from ragcore.voice.phrases import PHRASES, caller_language
from ragcore.voice.speech import SentenceSplitter

#: audio sent ahead of playback: enough to ride out a late tick, little enough that a
#: ``clear`` has little to throw away
LEAD_SECONDS = 0.1
#: barge-in: this many caller frames among the last ``BARGE_IN_WINDOW`` (100 ms of
#: speech within 200 ms), so a cough or a click does not stop the answer
BARGE_IN_FRAMES = 5
BARGE_IN_WINDOW = 10
#: the caller's silence after which what speech-to-text heard is finalized and asked,
#: tentatively, and the silence that makes it sure: the provider's endpointing
FINALIZE_SECONDS = 0.16
ENDPOINT_SECONDS = ENDPOINTING_MS / 1000
#: a finalized question the provider never answered (its transcript did not come back)
#: is asked with what was heard after this much silence: its utterance-end gap
ASK_ANYWAY_SECONDS = UTTERANCE_END_MS / 1000
#: caller audio kept to hand to speech-to-text when a barge-in starts listening again
PREROLL_FRAMES = 25
#: with no caller audio sent for this long, speech-to-text is told the stream is alive
KEEP_ALIVE_SECONDS = 4.0
#: silence after the bot has spoken before the caller is asked whether they are there;
#: after as long again, the call is closed
SILENCE_SECONDS = 12.0
#: a speech-to-text stream that fails this many times ends the call politely
MAX_LISTENER_FAILURES = 3
#: when the service stops, the sentence under way may take this long to finish at most,
#: and this much of the shutdown grace is kept for the closing words to be said
FINISH_SENTENCE_SECONDS = 8.0
CLOSING_SECONDS = 8.0
#: a call put through whose media stream the provider has not ended after this long is
#: hung up here (the stream only: the provider carries the call on)
TRANSFERRED_STREAM_SECONDS = 10.0

#: the words the call says on its own, in English (``ragcore.voice.phrases`` has them in
#: every language the call speaks; the call says them in the caller's: ``Call.language``)
APOLOGY = PHRASES["en"][phrases.APOLOGY]
NO_ANSWER = PHRASES["en"][phrases.NO_ANSWER]
STILL_THERE = PHRASES["en"][phrases.STILL_THERE]
GOODBYE = PHRASES["en"][phrases.GOODBYE]
CANT_HEAR = PHRASES["en"][phrases.CANT_HEAR]
MISSED = PHRASES["en"][phrases.MISSED]
SHUTTING_DOWN = PHRASES["en"][phrases.SHUTTING_DOWN]
MESSAGE_TAKEN = PHRASES["en"][phrases.MESSAGE_TAKEN]
PUTTING_THROUGH = PHRASES["en"][phrases.PUTTING_THROUGH]
TRANSFER_FAILED = PHRASES["en"][phrases.TRANSFER_FAILED]
#: the hang-up's reason (and the call's recorded end) when the service stopped
SHUTDOWN_REASON = "the service was shutting down"
#: the call's recorded end when the provider took it to put it through to a person
TRANSFERRED_REASON = "put through to a person"


def finish_within(grace: float) -> float:
    """How long, of a shutdown grace of ``grace`` seconds, the sentence under way may take
    to finish: what is left once the closing words have their time, at most
    ``FINISH_SENTENCE_SECONDS``."""
    return max(0.0, min(FINISH_SENTENCE_SECONDS, grace - CLOSING_SECONDS))


class State(enum.Enum):
    CONNECTING = "connecting"  # the socket is open, the stream not started
    LISTENING = "listening"  # the caller has the floor
    ANSWERING = "answering"  # a turn is under way; nothing of it has been sent yet
    SPEAKING = "speaking"  # the turn's audio is going out
    CLOSING = "closing"  # the last words before hanging up
    TRANSFERRING = "transferring"  # the provider is asked to put the call through
    ENDED = "ended"


# ---------------------------------------------------------------- events (in)


@attrs.frozen
class Started:
    stream_sid: str
    call_sid: str
    caller: str
    at: float


@attrs.frozen
class Inbound:
    """One frame of the caller's line; ``speech`` is the voice-activity detector's verdict."""

    audio: bytes
    speech: bool
    at: float


@attrs.frozen
class MarkPlayed:
    name: str
    at: float


@attrs.frozen
class KeyPressed:
    digit: str
    at: float


@attrs.frozen
class Tick:
    at: float


@attrs.frozen
class Transcript:
    """``finalized``: the provider's answer to ``Finalize`` (everything heard is in it)."""

    text: str
    final: bool
    ends_utterance: bool
    at: float
    finalized: bool = False


@attrs.frozen
class AnswerPiece:
    turn: int
    text: str
    at: float


@attrs.frozen
class Answered:
    turn: int
    answer: ChatAnswer
    at: float


@attrs.frozen
class AnswerNotGiven:
    turn: int
    reason: str
    at: float


@attrs.frozen
class SpeechAudio:
    turn: int
    part: int
    audio: bytes
    at: float


@attrs.frozen
class SpeechDone:
    turn: int
    part: int
    at: float


@attrs.frozen
class SpeechFailed:
    turn: int
    part: int
    reason: str
    at: float


@attrs.frozen
class ListenerFailed:
    reason: str
    at: float


@attrs.frozen
class Stopping:
    """The service is shutting down: finish the sentence under way, by ``finish_by`` (the
    call's clock) at the latest, say goodbye and hang up."""

    finish_by: float
    at: float


@attrs.frozen
class Transferred:
    """The provider took the call to put it through (``TransferCall``): its media stream
    ends next."""

    at: float


@attrs.frozen
class TransferFailed:
    """The provider did not take the call (``TransferCall``); ``reason`` is for the log."""

    reason: str
    at: float


@attrs.frozen
class Ended:
    """The stream stopped: the caller hung up, or the socket dropped."""

    reason: str
    at: float


TURN_EVENTS = (AnswerPiece, Answered, AnswerNotGiven, SpeechAudio, SpeechDone, SpeechFailed)
#: everything ``Call.receive`` takes
CallEvent: TypeAlias = (
    Started
    | Inbound
    | MarkPlayed
    | KeyPressed
    | Tick
    | Transcript
    | AnswerPiece
    | Answered
    | AnswerNotGiven
    | SpeechAudio
    | SpeechDone
    | SpeechFailed
    | ListenerFailed
    | Stopping
    | Transferred
    | TransferFailed
    | Ended
)


class UnexpectedEvent(Exception):
    """``event`` came in ``state``, where the call has no transition for it (not even one
    that ignores it): whoever fed it (the runner, a test) has it wrong. The call is left
    as it was. The message names the event's type and the state only: an event may carry
    the caller's words or audio."""

    def __init__(self, state: State, event: CallEvent) -> None:
        super().__init__(f"{type(event).__name__} while {state.value}: not expected")
        self.state = state
        self.event = event


# ---------------------------------------------------------------- effects (out)


@attrs.frozen
class SendAudio:
    audio: bytes  # one frame


@attrs.frozen
class SendMark:
    name: str


@attrs.frozen
class SendClear:
    pass


@attrs.frozen
class Listen:
    """Send caller audio to speech-to-text."""

    audio: bytes


@attrs.frozen
class KeepListening:
    """Tell speech-to-text the stream is alive though no audio is sent."""


@attrs.frozen
class Finalize:
    """Ask speech-to-text for the final transcript of what it heard so far, now."""


@attrs.frozen
class Ask:
    """Answer ``question``: the call's question number ``asked``, which is its turn's
    number in the call's conversation (``TurnFinished.turn``). A ``tentative`` one may be
    withdrawn (``Cancel``): until its ``Confirm``, its work must change nothing others
    see."""

    turn: int
    question: str
    asked: int
    tentative: bool = False


@attrs.frozen
class Confirm:
    """The tentative turn's caller is surely done: its work may go all the way."""

    turn: int


@attrs.frozen
class Speak:
    """Synthesize ``text``: its audio comes back as ``SpeechAudio`` then ``SpeechDone``,
    the parts of a turn in order."""

    turn: int
    part: int
    text: str


@attrs.frozen
class Cancel:
    """Stop the turn's model and speech work; its later events are ignored."""

    turn: int


@attrs.frozen
class TurnFinished:
    """One question and how its turn ended, for ``GET /voice/calls``. Times are seconds of
    the call's clock; ``stages`` has the milliseconds each stage took."""

    turn: int  # the question's number in the call: 1, 2, … (scripted words not counted)
    question: str
    answer: str
    outcome: str  # answered, interrupted, failed, hung up
    answer_detail: ChatAnswer | None
    times: dict[str, float]
    stalled: float = 0.0  # the longest the caller's playback ran dry mid-answer, seconds

    @property
    def stages(self) -> dict[str, int]:
        """Milliseconds from the end of the caller's speech: to the final transcript, to
        the model's first streamed text (``first_token_ms``, from the transcript), to the
        first sentence written, to its first audio, to its first frame sent; and the
        longest the caller's playback ran dry once the answer had begun (``stalled_ms``)."""
        times = self.times
        spans = {
            "transcript_ms": ("speech_ended", "transcribed"),
            "first_token_ms": ("transcribed", "first_text"),
            "first_sentence_ms": ("transcribed", "first_sentence"),
            "first_audio_ms": ("first_sentence", "first_audio"),
            "first_frame_ms": ("first_audio", "first_frame"),
            "voice_to_voice_ms": ("speech_ended", "first_frame"),
            "answer_ms": ("transcribed", "answered"),
        }
        stages = {
            name: round((times[end] - times[start]) * 1000)
            for name, (start, end) in spans.items()
            if start in times and end in times
        }
        if "first_frame" in times:
            stages["stalled_ms"] = round(self.stalled * 1000)
        return stages

    def in_conversation(self, call_sid: str, caller: str) -> history.TurnRecord:
        """This turn as the turn ``self.turn`` of the call's conversation (channel
        ``voice``, found by the call's place key): what the answer said when one came, and
        how the turn ended; ``answered`` keeps the answer's own ``not_found`` or
        ``limited``. The turn's times are its ``stages``, kept beside it."""
        kept = history.turn_record(
            "voice",
            None,
            ChatRequest(self.question),
            self.answer_detail,
            participant=caller,
            key=history.place_key("voice", call_sid),
            turn=self.turn,
        )
        return kept if self.outcome == "answered" else attrs.evolve(kept, outcome=self.outcome)


@attrs.frozen
class FinishTurn:
    """A question's turn is over: keep how it ended (``record``)."""

    record: TurnFinished


@attrs.frozen
class HangUp:
    reason: str


@attrs.frozen
class TransferCall:
    """Ask the provider to put the call through to ``number`` (E.164); the outcome comes
    back as ``Transferred`` or ``TransferFailed``."""

    number: str


#: everything ``Call.receive`` returns
CallEffect: TypeAlias = (
    SendAudio
    | SendMark
    | SendClear
    | Listen
    | KeepListening
    | Finalize
    | Ask
    | Confirm
    | Speak
    | Cancel
    | FinishTurn
    | HangUp
    | TransferCall
)


# ---------------------------------------------------------------- the call


@attrs.define
class Turn:
    """What the bot is saying: an answer to ``question``, or scripted words (None)."""

    number: int
    question: str | None
    times: dict[str, float]
    asked: int = 0  # the question's number in the call (0: scripted words)
    splitter: SentenceSplitter = attrs.field(factory=SentenceSplitter)
    parts: int = 0  # sentences handed to speech
    spoken: int = 0  # sentences whose audio is all queued
    played: int = 0  # sentences the caller has heard (their marks came back)
    written: bool = False  # nothing more will be said in this turn
    streamed: bool = False  # the answer came in pieces
    answer: ChatAnswer | None = None
    hang_up: bool = False  # the call ends when this turn has been heard
    last_part: int | None = None  # a stop leaves no sentence said after this one
    dropped: bool = False  # a stop left sentences of it unsaid
    shutdown: bool = False  # the closing words of a stop
    stalled: float = 0.0  # the longest the caller's playback ran dry mid-turn, in seconds
    tentative: bool = False  # asked before the caller's silence made sure: held back


class Call:
    """One call's state. ``receive`` is the only way in."""

    def __init__(
        self, greeting: str, asked_before: int = 0, language: str = "en", transfer_to: str = ""
    ) -> None:
        """``asked_before``: the questions the call's conversation already has (a media
        stream that reconnected mid-call); its questions are numbered after them.
        ``language``: the language of the call's own words until the caller has spoken
        (``ragcore.voice.phrases.call_language``); then it follows the caller's.
        ``transfer_to``: the number a call handed to a person is put through to
        (VOICE_TRANSFER_NUMBER); blank: the caller leaves a message."""
        self.greeting = greeting
        self.language = language
        self.transfer_to = transfer_to
        self.transferred: float | None = None  # when the provider took it to put it through
        self._transfer_failed = False  # once failed, the call takes messages instead
        self.state = State.CONNECTING
        self.stream_sid = ""
        self.call_sid = ""
        self.caller = ""
        self.turn: Turn | None = None
        self._turns = 0
        self._questions = asked_before
        self._queue: deque[bytes | str] = deque()  # frames, and mark names between them
        self._partial = b""  # speech audio short of a whole frame
        self._sent_until = 0.0  # when what was sent will have played
        self._echo = EchoGuard()
        self._recent: deque[bool] = deque(maxlen=BARGE_IN_WINDOW)
        self._preroll: deque[tuple[bytes, bool]] = deque(maxlen=PREROLL_FRAMES)
        self._utterance: list[str] = []
        self._unfinalized = False  # the caller spoke since speech-to-text last finalized
        self._finalized_at: float | None = None  # a Finalize whose transcript is awaited
        self._carried = ""  # a question the caller went on with before it was answered
        self._last_speech = 0.0
        self._last_listen = 0.0
        self._quiet_since: float | None = None
        self._prompted = False
        self._listener_failures = 0
        self._stopping_by: float | None = None  # the service stops: finish by then
        self._since_mark = 0  # frames sent since the last mark

    def receive(self, event: CallEvent) -> list[CallEffect]:
        """The effects of ``event``, in the order to run them; ``UnexpectedEvent`` when the
        call's state has no transition for it."""
        if isinstance(event, TURN_EVENTS) and (self.turn is None or event.turn != self.turn.number):
            return []  # a cancelled turn's late news
        handler = TRANSITIONS.get((self.state, type(event)))
        if handler is None:
            raise UnexpectedEvent(self.state, event)
        return handler(self, event)

    def _ignore(self, event: CallEvent) -> list[Any]:
        """An event this state takes and does nothing with (see ``TRANSITIONS``)."""
        return []

    # ------------------------------------------------------------ the stream

    def _start(self, event: Started) -> list[Any]:
        self.stream_sid, self.call_sid, self.caller = (
            event.stream_sid,
            event.call_sid,
            event.caller,
        )
        self._last_listen = event.at
        if self._stopping_by is not None:  # stopped before it began: no greeting
            return self._close(event.at)
        return self._say(self.greeting, event.at)

    def _end(self, event: Ended) -> list[Any]:
        effects = self._stop_turn("hung up", event.at) if self.turn is not None else []
        self.state = State.ENDED
        return effects

    def _tick(self, event: Tick) -> list[Any]:
        effects = self._endpoint(event.at)
        effects += self._pace(event.at)
        if event.at - self._last_listen >= KEEP_ALIVE_SECONDS:
            self._last_listen = event.at
            effects.append(KeepListening())
        if (
            self.state is State.LISTENING
            and self._quiet_since is not None
            and not self._utterance
            and event.at - self._quiet_since >= SILENCE_SECONDS
        ):
            if not self._prompted:
                self._prompted = True
                effects += self._say(self._words(phrases.STILL_THERE), event.at)
            else:
                effects += self._say(self._words(phrases.GOODBYE), event.at, hang_up=True)
        if (
            self._stopping_by is not None
            and self.state in (State.ANSWERING, State.SPEAKING)
            and event.at >= self._stopping_by
        ):  # the sentence under way takes too long to finish: cut it
            effects += self._stop_turn("interrupted", event.at)
            effects += self._close(event.at)
        return effects

    def _stop(self, event: Stopping) -> list[Any]:
        """The service stops: the last words, then hang up (see the module's docstring)."""
        if self._stopping_by is not None:
            return []
        self._stopping_by = event.finish_by
        self._utterance = []
        self._carried = ""
        if self.state is State.LISTENING:
            return self._close(event.at)
        if self.state not in (State.ANSWERING, State.SPEAKING):
            # not started (the greeting is replaced), already saying goodbye, or being put
            # through (a transfer that fails closes the call then)
            return []
        turn = self._current()
        if turn.question is None and "first_frame" not in turn.times:
            # scripted words not begun (a greeting, a prompt) are not worth saying now
            return self._stop_turn("interrupted", event.at) + self._close(event.at)
        turn.last_part = turn.played  # the sentence being heard, or the next to be
        return self._drop_after(turn, event.at) + self._finish_if_heard(event.at)

    def _drop_after(self, turn: Turn, at: float) -> list[Any]:
        """Keep the audio of the turn's ``last_part`` only: what comes after it is not said."""
        mark = f"{turn.number}.{turn.last_part}"
        if mark in self._queue:  # all synthesized, not all sent: keep it to its mark
            while self._queue[-1] != mark:
                self._queue.pop()
            self._partial = b""
            return []
        assert turn.last_part is not None
        if turn.spoken > turn.last_part:
            # its mark is out (it has at most LEAD_SECONDS to play); what was sent after it
            # is the next sentence's beginning: cleared, with the end of this one
            self._queue.clear()
            self._partial = b""
            if self._since_mark:
                self._echo.cleared(at)
                return [SendClear()]
        return []  # still being synthesized: its audio keeps coming, the later parts' not

    # ------------------------------------------------------------ the caller's line

    def _inbound(self, event: Inbound) -> list[Any]:
        at = event.at
        exposed = self._echo.exposed(at)
        caller = event.speech
        if exposed:  # the level matters only while echo may be coming back
            caller = self._echo.is_caller(level_db(event.audio), event.speech, at)
        if caller:
            self._last_speech = at
            self._quiet_since = at if self.state is State.LISTENING else self._quiet_since
            self._prompted = False
            self._unfinalized = True
            self._finalized_at = None
        effects: list[Any] = []
        if self.state in (State.ANSWERING, State.SPEAKING) and self._stopping_by is None:
            self._recent.append(caller)
            turn = self._current()
            if turn.tentative and caller and self._recent.count(True) >= 2:
                effects = self._withdraw(turn)  # they go on: the start of their question
            elif sum(self._recent) >= BARGE_IN_FRAMES:
                self._preroll.append((event.audio, False))
                return self._barge_in(at)
        if exposed and not caller:
            self._preroll.append((event.audio, False))
            return []  # possibly the bot's own voice: never transcribed
        self._preroll.append((event.audio, True))
        self._last_listen = at
        return effects + [Listen(event.audio)]

    def _barge_in(self, at: float) -> list[Any]:
        """The caller talks over the bot: stop it, and listen from where they began."""
        turn = self.turn
        assert turn is not None
        if turn.question and "first_frame" not in turn.times:
            self._carried = turn.question  # they had heard nothing: they were not done asking
        effects = self._stop_turn("interrupted", at)
        unheard = [audio for audio, forwarded in self._preroll if not forwarded]
        self._preroll = deque(((a, True) for a, _ in self._preroll), maxlen=PREROLL_FRAMES)
        self._last_listen = at
        return effects + [Listen(audio) for audio in unheard]

    def _key(self, event: KeyPressed) -> list[Any]:
        """A key pressed while the bot talks stops it, as speaking over it would."""
        if self.state in (State.ANSWERING, State.SPEAKING) and self._stopping_by is None:
            return self._stop_turn("interrupted", event.at)
        return []

    # ------------------------------------------------------------ speech-to-text

    def _transcript(self, event: Transcript) -> list[Any]:
        if self._stopping_by is not None:
            return []  # the service stops: nothing more is asked
        if event.final and event.text:
            self._utterance.append(event.text)
        # what was finalized in a silence that still lasts: all the caller said, so far
        early = event.finalized and self._finalized_at is not None
        if event.finalized:
            self._finalized_at = None
        turn = self.turn if self.state is State.ANSWERING else None
        if turn is not None and turn.tentative and event.ends_utterance and not self._utterance:
            return self._confirm(turn)  # the provider heard the caller stop too
        if not ((event.ends_utterance or early) and self._utterance):
            return []
        effects: list[Any] = []
        if turn is not None and turn.tentative:
            effects += self._withdraw(turn)  # they said more: the whole of it is the question
        elif turn is not None:
            # they went on before the answer began: one question, asked again whole
            self._carried = turn.question or ""
            effects += self._stop_turn("interrupted", event.at)
        question = " ".join(self._utterance)
        self._utterance = []
        sure = event.ends_utterance or round(event.at - self._last_speech, 6) >= ENDPOINT_SECONDS
        return effects + self._ask(question, event.at, tentative=not sure)

    def _endpoint(self, at: float) -> list[Any]:
        """The caller's silence, each tick: long enough, speech-to-text is told to finalize
        what it heard (its transcript asks the question, tentatively); longer, a tentative
        question is confirmed; much longer, a finalized question the provider never
        answered is asked with what was heard."""
        quiet = round(at - self._last_speech, 6)  # whole frames, not float noise
        turn = self.turn
        if turn is not None and turn.tentative and quiet >= ENDPOINT_SECONDS:
            return self._confirm(turn)
        if self.state is not State.LISTENING or self._stopping_by is not None:
            return []
        if self._unfinalized and quiet >= FINALIZE_SECONDS:
            self._unfinalized = False
            self._finalized_at = at
            return [Finalize()]
        if self._finalized_at is not None and self._utterance and quiet >= ASK_ANYWAY_SECONDS:
            self._finalized_at = None
            question = " ".join(self._utterance)
            self._utterance = []
            return self._ask(question, at)
        return []

    def _confirm(self, turn: Turn) -> list[Any]:
        """The tentative turn's caller is done: its held audio may go out."""
        turn.tentative = False
        if "first_audio" in turn.times and self.state is State.ANSWERING:
            self.state = State.SPEAKING
        return [Confirm(turn.number)]

    def _withdraw(self, turn: Turn) -> list[Any]:
        """Take a tentative question back, as if it had not been asked: its work is
        cancelled, nothing of it was sent or is recorded, and its words begin the
        question the caller goes on with."""
        self._utterance.insert(0, turn.question or "")
        self._questions -= 1
        self._queue.clear()
        self._partial = b""
        self.turn = None
        self.state = State.LISTENING
        self._recent.clear()
        return [Cancel(turn.number)]

    def _listener_failed(self, event: ListenerFailed) -> list[Any]:
        if self._stopping_by is not None:
            return []  # the call is closing anyway
        self._listener_failures += 1
        self._utterance = []
        if self._listener_failures >= MAX_LISTENER_FAILURES:
            effects = self._stop_turn("failed", event.at) if self.turn is not None else []
            return effects + self._say(self._words(phrases.CANT_HEAR), event.at, hang_up=True)
        if self.state is State.LISTENING:
            return self._say(self._words(phrases.MISSED), event.at)
        return []

    def _ask(self, question: str, at: float, *, tentative: bool = False) -> list[Any]:
        question = f"{self._carried} {question}".strip()
        self._carried = ""
        self._unfinalized, self._finalized_at = False, None  # all heard is in the question
        self.language = caller_language(question) or self.language
        turn = self._new_turn(question, at)
        self._questions += 1
        turn.asked = self._questions
        turn.tentative = tentative
        turn.times.update(speech_ended=min(self._last_speech or at, at), transcribed=at)
        return [Ask(turn.number, question, turn.asked, tentative)]

    # ------------------------------------------------------------ the answer

    def _piece(self, event: AnswerPiece) -> list[Any]:
        turn = self._current()
        turn.streamed = True
        turn.times.setdefault("first_text", event.at)
        return self._speak(turn, turn.splitter.feed(event.text), event.at)

    def _answered(self, event: Answered) -> list[Any]:
        turn = self._current()
        turn.answer = event.answer
        turn.times["answered"] = event.at
        if turn.question is not None:
            spoken_in = caller_language(turn.question, event.answer.language)
            self.language = spoken_in or self.language
        if event.answer.held:  # a person answers: the caller's words wait for them
            held = phrases.PUTTING_THROUGH if self._can_transfer() else phrases.MESSAGE_TAKEN
            sentences = [self._words(held)]
        else:
            sentences = [] if turn.streamed else turn.splitter.feed(event.answer.answer)
            sentences += turn.splitter.flush()
        if not turn.parts and not sentences:
            sentences = [self._words(phrases.NO_ANSWER)]
        effects = self._speak(turn, sentences, event.at)
        turn.written = True
        return effects + self._finish_if_heard(event.at)

    def _answer_failed(self, event: AnswerNotGiven) -> list[Any]:
        if self._stopping_by is not None:
            return self._stop_turn("failed", event.at) + self._close(event.at)
        return self._stop_turn("failed", event.at) + self._say(
            self._words(phrases.APOLOGY), event.at
        )

    def _speak(self, turn: Turn, sentences: list[str], at: float) -> list[Any]:
        effects = []
        for sentence in sentences:
            if turn.last_part is not None and turn.parts > turn.last_part:
                turn.dropped = True  # the service stops: nothing after the sentence under way
                break
            turn.times.setdefault("first_sentence", at)
            effects.append(Speak(turn.number, turn.parts, sentence))
            turn.parts += 1
        return effects

    # ------------------------------------------------------------ speech and playback

    def _audio(self, event: SpeechAudio) -> list[Any]:
        turn = self._current()
        if _beyond(turn, event.part):
            return []
        turn.times.setdefault("first_audio", event.at)
        if self.state is State.ANSWERING and not turn.tentative:
            self.state = State.SPEAKING
        audio = self._partial + event.audio
        whole = len(audio) - len(audio) % FRAME_BYTES
        self._queue.extend(audio[i : i + FRAME_BYTES] for i in range(0, whole, FRAME_BYTES))
        self._partial = audio[whole:]
        return self._pace(event.at)

    def _speech_done(self, event: SpeechDone) -> list[Any]:
        turn = self._current()
        if _beyond(turn, event.part):
            return []
        if self._partial:
            padding = bytes([SILENT_BYTE]) * (FRAME_BYTES - len(self._partial))
            self._queue.append(self._partial + padding)
            self._partial = b""
        self._queue.append(f"{turn.number}.{event.part}")
        turn.spoken += 1
        return self._pace(event.at)

    def _speech_failed(self, event: SpeechFailed) -> list[Any]:
        turn = self._current()
        if _beyond(turn, event.part):
            return []
        effects = self._stop_turn("failed", event.at)
        if turn.hang_up:
            self.state = State.ENDED
            return effects + [HangUp(_hang_up_reason(turn, "the goodbye could not be said"))]
        if self._stopping_by is not None:
            return effects + self._close(event.at)
        if turn.question is None:  # not even scripted words can be said: say nothing
            return effects
        return effects + self._say(self._words(phrases.APOLOGY), event.at)

    def _mark(self, event: MarkPlayed) -> list[Any]:
        turn = self.turn
        number, _, _ = event.name.partition(".")
        if turn is not None and number == str(turn.number):
            turn.played += 1
        return self._finish_if_heard(event.at)

    def _pace(self, at: float) -> list[Any]:
        """Frames due by ``at + LEAD_SECONDS``, and the marks between them; none of a
        tentative turn."""
        effects: list[Any] = []
        if self.turn is not None and self.turn.tentative:
            return effects
        while self._queue and (
            isinstance(self._queue[0], str) or self._sent_until < at + LEAD_SECONDS
        ):
            item = self._queue.popleft()
            if isinstance(item, str):
                effects.append(SendMark(item))
                self._since_mark = 0
                continue
            start = max(self._sent_until, at)
            if self.turn is not None and "first_frame" in self.turn.times:
                # the provider played all it had before this frame came: the caller heard
                # a gap (a late tick, speech that did not keep up)
                self.turn.stalled = max(self.turn.stalled, at - self._sent_until)
            self._echo.playing(start, level_db(item))
            self._sent_until = start + FRAME_SECONDS
            if self.turn is not None:
                self.turn.times.setdefault("first_frame", at)
            effects.append(SendAudio(item))
            self._since_mark += 1
        return effects

    def _finish_if_heard(self, at: float) -> list[Any]:
        """The turn is over once all of it is written, synthesized and played."""
        turn = self.turn
        if turn is None:
            return []
        heard = turn.written and turn.played >= turn.parts
        if not (heard or (turn.last_part is not None and turn.played > turn.last_part)):
            return []
        cut = turn.last_part is not None and not (heard and not turn.dropped)
        turn.times["finished"] = at
        self.turn = None
        effects: list[Any] = [Cancel(turn.number)] if cut else []
        if turn.question is not None:
            effects.append(FinishTurn(_record(turn, "interrupted" if cut else "answered")))
        if turn.hang_up:
            self.state = State.ENDED
            return effects + [
                HangUp(_hang_up_reason(turn, "the call was closed after the goodbye"))
            ]
        if self._stopping_by is not None:
            return effects + self._close(at)
        if turn.answer is not None and turn.answer.mode == "human" and self._can_transfer():
            self.state = State.TRANSFERRING  # heard whole: the caller knows what comes
            return effects + [TransferCall(self.transfer_to)]
        self.state = State.LISTENING
        self._quiet_since = at
        self._recent.clear()
        return effects

    # ------------------------------------------------------------ handoff

    def _can_transfer(self) -> bool:
        """Whether a call handed to a person is put through (else it takes messages)."""
        return bool(self.transfer_to) and not self._transfer_failed

    def _transferred(self, event: Transferred) -> list[Any]:
        self.transferred = event.at
        return []  # the provider ends the media stream (``Ended``)

    def _await_the_streams_end(self, event: Tick) -> list[Any]:
        """Being put through: keep speech-to-text alive; once the provider has taken the
        call, end a stream it leaves open too long."""
        effects = self._tick(event)
        if self.transferred is not None and event.at - self.transferred >= (
            TRANSFERRED_STREAM_SECONDS
        ):
            self.state = State.ENDED
            effects.append(HangUp(TRANSFERRED_REASON))
        return effects

    def _transfer_not_made(self, event: TransferFailed) -> list[Any]:
        """The caller is still here: tell them, and take their message instead."""
        self._transfer_failed = True
        if self._stopping_by is not None:
            return self._close(event.at)
        return self._say(self._words(phrases.TRANSFER_FAILED), event.at)

    # ------------------------------------------------------------ turns

    def _new_turn(self, question: str | None, at: float) -> Turn:
        self._turns += 1
        self.turn = Turn(self._turns, question, {"started": at})
        self.state = State.ANSWERING
        self._recent.clear()
        return self.turn

    def _say(self, text: str, at: float, *, hang_up: bool = False) -> list[Any]:
        """Scripted words as a turn of their own (the greeting, an apology, a goodbye)."""
        turn = self._new_turn(None, at)
        turn.hang_up = hang_up
        effects = self._speak(turn, [text], at)
        turn.written = True
        if hang_up:
            self.state = State.CLOSING
        return effects

    def _close(self, at: float) -> list[Any]:
        """The closing words of a stop, then hang up."""
        effects = self._say(self._words(phrases.SHUTTING_DOWN), at, hang_up=True)
        self._current().shutdown = True
        return effects

    def _stop_turn(self, outcome: str, at: float) -> list[Any]:
        """End the turn under way: cancel its work, drop its unplayed audio."""
        turn = self._current()
        effects: list[Any] = [Cancel(turn.number)]
        if turn.times.get("first_frame") is not None:
            effects.append(SendClear())
            self._echo.cleared(at)
        self._queue.clear()
        self._partial = b""
        self._sent_until = at
        turn.times["finished"] = at
        if turn.question is not None:
            effects.append(FinishTurn(_record(turn, outcome)))
        self.turn = None
        self.state = State.LISTENING
        self._quiet_since = at
        self._recent.clear()
        return effects

    def _words(self, name: str) -> str:
        """The call's own words ``name`` in the caller's language (``self.language``)."""
        return phrases.phrase(name, self.language)

    def _current(self) -> Turn:
        assert self.turn is not None  # receive() drops turn events without their turn
        return self.turn


def _beyond(turn: Turn, part: int) -> bool:
    """Whether ``part`` comes after the last sentence a stop lets the turn say."""
    return turn.last_part is not None and part > turn.last_part


def _hang_up_reason(turn: Turn, reason: str) -> str:
    return SHUTDOWN_REASON if turn.shutdown else reason


def _record(turn: Turn, outcome: str) -> TurnFinished:
    answer = turn.answer.answer if turn.answer is not None else ""
    return TurnFinished(
        turn.asked, turn.question or "", answer, outcome, turn.answer, turn.times, turn.stalled
    )


# ---------------------------------------------------------------- the transitions

_LIVE = (State.LISTENING, State.ANSWERING, State.SPEAKING, State.CLOSING)
_TURN = (State.ANSWERING, State.SPEAKING)
_SAYING = (State.ANSWERING, State.SPEAKING, State.CLOSING)
_ROWS: tuple[tuple[tuple[State, ...], type, Callable[[Call, Any], list[Any]]], ...] = (
    ((State.CONNECTING,), Started, Call._start),
    ((State.CONNECTING, *_LIVE), Ended, Call._end),
    ((State.CONNECTING, *_LIVE), Stopping, Call._stop),
    (_LIVE, Tick, Call._tick),
    (_LIVE, Inbound, Call._inbound),
    (_LIVE, MarkPlayed, Call._mark),
    (_TURN, KeyPressed, Call._key),
    ((State.LISTENING, State.ANSWERING), Transcript, Call._transcript),
    (_LIVE, ListenerFailed, Call._listener_failed),
    (_TURN, AnswerPiece, Call._piece),
    (_TURN, Answered, Call._answered),
    (_TURN, AnswerNotGiven, Call._answer_failed),
    (_SAYING, SpeechAudio, Call._audio),
    (_SAYING, SpeechDone, Call._speech_done),
    (_SAYING, SpeechFailed, Call._speech_failed),
    ((State.TRANSFERRING,), Transferred, Call._transferred),
    ((State.TRANSFERRING,), TransferFailed, Call._transfer_not_made),
    ((State.TRANSFERRING,), Tick, Call._await_the_streams_end),
    ((State.TRANSFERRING,), Ended, Call._end),
    ((State.TRANSFERRING,), Stopping, Call._stop),
    # ignored on purpose:
    # before the stream starts there is nothing to pace and no one to listen to
    ((State.CONNECTING,), Tick, Call._ignore),
    ((State.CONNECTING,), Inbound, Call._ignore),
    # a key stops the bot talking; listening, it means nothing, and it does not cut the
    # last words
    ((State.LISTENING, State.CLOSING), KeyPressed, Call._ignore),
    # the caller takes the floor by barging in (the audio decides); what speech-to-text
    # makes of the line while the bot's audio plays, or its last words, is not a question
    ((State.SPEAKING, State.CLOSING), Transcript, Call._ignore),
    # being put through, the caller talks to no one here: what they say, a key, the
    # marks of what they heard before, a lost speech-to-text stream change nothing
    *(
        ((State.TRANSFERRING,), event, Call._ignore)
        for event in (Inbound, MarkPlayed, KeyPressed, Transcript, ListenerFailed)
    ),
    # the call is over; the runner's tasks and the provider's socket may still deliver
    # what was under way (the stream's end after a hang-up, a tick, a mark, a stop)
    *(
        ((State.ENDED,), event, Call._ignore)
        for event in (
            Inbound,
            MarkPlayed,
            KeyPressed,
            Tick,
            Transcript,
            ListenerFailed,
            Stopping,
            Ended,
            # the caller hung up while the provider was asked to put the call through
            Transferred,
            TransferFailed,
        )
    ),
)
#: (state, event type) -> handler; a pair not listed is unexpected (``UnexpectedEvent``).
#: A turn's events need no row for ENDED: with no turn under way they never reach it.
TRANSITIONS: dict[tuple[State, type], Callable[[Call, Any], list[Any]]] = {
    (state, event): handler for states, event, handler in _ROWS for state in states
}
