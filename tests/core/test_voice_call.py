"""The call state machine, driven by recorded event sequences: no network, no clock."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest

from ragcore.chat.history import place_key
from ragcore.chat.pipeline import ChatAnswer
from ragcore.voice.audio import FRAME_BYTES, SILENT_FRAME, encode
from ragcore.voice.call import (
    APOLOGY,
    ASK_ANYWAY_SECONDS,
    BARGE_IN_FRAMES,
    CANT_HEAR,
    ENDPOINT_SECONDS,
    FINALIZE_SECONDS,
    GOODBYE,
    KEEP_ALIVE_SECONDS,
    LEAD_SECONDS,
    MAX_LISTENER_FAILURES,
    MISSED,
    SHUTDOWN_REASON,
    SHUTTING_DOWN,
    SILENCE_SECONDS,
    STILL_THERE,
    TURN_EVENTS,
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
    UnexpectedEvent,
    finish_within,
)

GREETING = "Hello, this is Ava from the shop. How can I help?"


def tone(seconds: float, amplitude: int = 8000, hertz: int = 440) -> bytes:
    """A sine tone as µ-law: a stand-in for speech of a known level."""
    count = int(seconds * 8000)
    return encode([int(amplitude * math.sin(2 * math.pi * hertz * i / 8000)) for i in range(count)])


def of(effects: list[Any], kind: type) -> list[Any]:
    return [e for e in effects if isinstance(e, kind)]


class Phone:
    """Drives a Call as voiceio would, keeping the clock and what was sent and played."""

    def __init__(self, language: str = "en") -> None:
        self.call = Call(GREETING, language=language)
        self.now = 0.0
        self.sent: list[bytes] = []
        self.marks: list[str] = []  # sent, not yet returned
        self.effects: list[Any] = []

    def feed(self, event: Any) -> list[Any]:
        effects = self.call.receive(event)
        self.effects += effects
        for effect in effects:
            if isinstance(effect, SendAudio):
                self.sent.append(effect.audio)
            elif isinstance(effect, SendMark):
                self.marks.append(effect.name)
            elif isinstance(effect, SendClear):
                self.marks.clear()
        return effects

    def start(self) -> list[Any]:
        return self.feed(Started("MZ1", "CA1", "+15551234567", self.now))

    def ticks(self, seconds: float, frame: bytes | None = SILENT_FRAME, speech: bool = False):
        """Let time pass in 20 ms steps; the line carries ``frame`` each step."""
        effects = []
        for _ in range(round(seconds / 0.02)):
            self.now = round(self.now + 0.02, 6)
            effects += self.feed(Tick(self.now))
            if frame is not None:
                effects += self.feed(Inbound(frame, speech, self.now))
        return effects

    def say(self, audio: bytes, speech: bool = True) -> list[Any]:
        """The caller's audio, one frame a tick."""
        effects = []
        for start in range(0, len(audio), FRAME_BYTES):
            self.now = round(self.now + 0.02, 6)
            effects += self.feed(Tick(self.now))
            effects += self.feed(Inbound(audio[start : start + FRAME_BYTES], speech, self.now))
        return effects

    def synthesize(self, speak: Speak, audio: bytes) -> list[Any]:
        return self.feed(SpeechAudio(speak.turn, speak.part, audio, self.now)) + self.feed(
            SpeechDone(speak.turn, speak.part, self.now)
        )

    def play_marks(self) -> list[Any]:
        """Playback reached every mark sent so far."""
        effects = []
        while self.marks:
            effects += self.feed(MarkPlayed(self.marks.pop(0), self.now))
        return effects

    def greet(self, audio: bytes = b"") -> None:
        """Start, say the greeting (``audio``, or 0.2 s of tone), play it to its end."""
        [speak] = of(self.start(), Speak)
        self.synthesize(speak, audio or tone(0.2))
        self.ticks(0.4)
        self.play_marks()
        assert self.call.state is State.LISTENING

    def answer(self, ask: Ask, text: str) -> list[Any]:
        return self.feed(AnswerPiece(ask.turn, text, self.now))

    def ask(self, question: str) -> Ask:
        self.say(tone(0.6))
        self.ticks(0.3)
        [ask] = of(self.feed(Transcript(question, True, True, self.now)), Ask)
        return ask


def test_the_greeting_is_said_first_and_played_before_the_call_listens() -> None:
    phone = Phone()
    effects = phone.start()
    assert effects == [Speak(1, 0, GREETING)]
    assert phone.call.state is State.ANSWERING
    phone.synthesize(effects[0], tone(1.0))
    assert phone.call.state is State.SPEAKING
    # paced: only what plays within LEAD_SECONDS went out at once
    assert len(phone.sent) == round(LEAD_SECONDS / 0.02)
    phone.ticks(1.2)
    assert b"".join(phone.sent) == tone(1.0)
    assert phone.marks == ["1.0"]  # after the last frame
    effects = phone.play_marks()
    assert phone.call.state is State.LISTENING
    assert of(effects, FinishTurn) == []  # scripted words are not a question


def test_pacing_never_runs_more_than_the_lead_ahead_of_playback() -> None:
    phone = Phone()
    [speak] = of(phone.start(), Speak)
    phone.synthesize(speak, tone(2.0))
    for step in range(1, 60):
        phone.ticks(0.02, frame=None)
        ahead = len(phone.sent) * 0.02 - step * 0.02
        assert ahead <= LEAD_SECONDS + 0.02 + 1e-9


def test_a_question_is_answered_sentence_by_sentence_and_recorded_with_its_timings() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    assert ask.question == "how long do I have to return an item"
    assert phone.call.state is State.ANSWERING
    effects = phone.feed(AnswerPiece(ask.turn, "Items can be returned within 30 days", phone.now))
    assert of(effects, Speak) == []  # not a whole sentence yet
    phone.now += 0.1
    effects = phone.feed(AnswerPiece(ask.turn, ". [1] Refunds take 5", phone.now))
    [first] = of(effects, Speak)
    assert first.text == "Items can be returned within 30 days."
    phone.synthesize(first, tone(0.5))
    phone.now += 0.1
    answer = ChatAnswer(
        "Items can be returned within 30 days. [1] Refunds take 5 days. [1]",
        (),
        "support",
        "openai",
        "gpt",
    )
    effects = phone.feed(AnswerPiece(ask.turn, " days. [1]", phone.now))
    effects += phone.feed(Answered(ask.turn, answer, phone.now))
    [second] = of(effects, Speak)
    assert second.text == "Refunds take 5 days."
    phone.synthesize(second, tone(0.5))
    phone.ticks(1.2)
    [record] = of(phone.play_marks(), FinishTurn)
    assert record.record.outcome == "answered"
    assert record.record.turn == 1  # the first question; the greeting is not counted
    assert record.record.answer == answer.answer
    stages = record.record.stages
    assert stages["transcript_ms"] == 300  # speech ended 0.3 s before the final transcript
    assert stages["first_sentence_ms"] == 100
    assert stages["voice_to_voice_ms"] >= 400
    assert stages["stalled_ms"] == 0  # ticks on time: the caller never heard a gap
    assert phone.call.state is State.LISTENING


def test_a_late_tick_that_lets_playback_run_dry_is_recorded_as_a_stall() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    [speak] = of(phone.answer(ask, "We open at nine every weekday. "), Speak)
    phone.synthesize(speak, tone(2.0))
    phone.ticks(0.4, frame=None)
    phone.now += 0.35  # the loop was busy: 350 ms without a tick, 100 ms of audio ahead
    phone.ticks(2.0, frame=None)
    answer = ChatAnswer("We open at nine every weekday. [1]", (), "support", "x", "y")
    phone.feed(Answered(ask.turn, answer, phone.now))
    [record] = of(phone.play_marks(), FinishTurn)
    assert 230 <= record.record.stages["stalled_ms"] <= 270


def test_the_models_first_text_is_timed_from_the_transcript_when_it_streams() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    phone.now += 0.25  # the model's first words come a quarter second after the transcript
    phone.answer(ask, "Items can be returned")
    phone.now += 0.1
    [speak] = of(phone.answer(ask, " within 30 days. "), Speak)
    phone.synthesize(speak, tone(0.5))
    answer = ChatAnswer("Items can be returned within 30 days. [1]", (), "support", "x", "y")
    phone.feed(Answered(ask.turn, answer, phone.now))
    phone.ticks(0.8)
    [record] = of(phone.play_marks(), FinishTurn)
    stages = record.record.stages
    assert stages["first_token_ms"] == 250
    assert stages["first_sentence_ms"] == 350  # the first whole sentence came later
    spoken_after = stages["transcript_ms"] + stages["first_token_ms"]
    assert spoken_after <= stages["voice_to_voice_ms"]


def test_a_whole_answer_is_said_too_when_it_was_not_streamed() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("who checks the figures")
    answer = ChatAnswer("The finance team checks them. [1] Every Friday.", (), "x", "y", "z")
    effects = phone.feed(Answered(ask.turn, answer, phone.now))
    said = [s.text for s in of(effects, Speak)]
    assert said == ["The finance team checks them.", "Every Friday."]
    phone.synthesize(of(effects, Speak)[0], tone(0.3))
    phone.synthesize(of(effects, Speak)[1], tone(0.3))
    phone.ticks(0.8)
    [record] = of(phone.play_marks(), FinishTurn)
    assert "first_token_ms" not in record.record.stages  # no text streamed
    assert "first_sentence_ms" in record.record.stages


def test_caller_speech_over_the_answer_clears_it_cancels_it_and_is_listened_to() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    [speak] = of(phone.answer(ask, "We open at nine every weekday. "), Speak)
    phone.synthesize(speak, tone(3.0))
    phone.ticks(0.5)
    assert phone.call.state is State.SPEAKING
    effects = phone.say(tone(0.2, amplitude=8000, hertz=300))
    assert SendClear() in effects
    assert Cancel(ask.turn) in effects
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "interrupted"
    heard = of(effects, Listen)
    assert len(heard) >= BARGE_IN_FRAMES  # the words so far go to speech-to-text
    assert phone.call.state is State.LISTENING
    # the old answer's late pieces and audio are ignored
    assert phone.feed(AnswerPiece(ask.turn, "And on Saturdays at ten. ", phone.now)) == []
    assert phone.feed(SpeechAudio(ask.turn, 0, tone(1.0), phone.now)) == []
    sent = len(phone.sent)
    phone.ticks(0.5)
    assert len(phone.sent) == sent


def test_the_bots_own_echo_20_db_down_neither_barges_in_nor_is_transcribed() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    [speak] = of(phone.answer(ask, "We open at nine every weekday. "), Speak)
    audio = tone(2.0, amplitude=12000)
    phone.synthesize(speak, audio)
    echo = tone(2.0, amplitude=1200)  # -20 dB, and the detector calls it speech
    effects = phone.say(echo[: 160 * 90], speech=True)
    assert of(effects, SendClear) == [] and of(effects, Cancel) == []
    assert of(effects, Listen) == []
    assert phone.call.state is State.SPEAKING


def test_echo_in_the_tail_after_the_bot_stops_is_not_transcribed() -> None:
    phone = Phone()
    phone.greet(tone(0.4, amplitude=12000))
    effects = phone.say(tone(0.2, amplitude=1200), speech=True)  # the greeting's echo
    assert of(effects, Listen) == []
    phone.ticks(0.6)
    assert of(phone.say(tone(0.1)), Listen)  # later, the caller is heard again


def test_a_caller_who_goes_on_before_the_answer_starts_is_asked_as_one_question() -> None:
    phone = Phone()
    phone.greet()
    first = phone.ask("do you ship")
    effects = phone.say(tone(0.3))  # they go on speaking while the answer is prepared
    assert Cancel(first.turn) in effects
    phone.ticks(0.3)
    [ask] = of(phone.feed(Transcript("to Canada", True, True, phone.now)), Ask)
    assert ask.question == "do you ship to Canada"


def test_a_short_addition_that_does_not_barge_in_still_joins_the_question() -> None:
    phone = Phone()
    phone.greet()
    first = phone.ask("do you ship")
    effects = phone.feed(Transcript("to Canada", True, True, phone.now))
    assert Cancel(first.turn) in effects
    [ask] = of(effects, Ask)
    assert ask.question == "do you ship to Canada"


def finalized(phone: Phone, text: str) -> list[Any]:
    """The provider's answer to ``Finalize``: what it heard, final."""
    return phone.feed(Transcript(text, True, False, phone.now, finalized=True))


def asked_early(text: str) -> tuple[Phone, Ask]:
    """A greeted call whose caller spoke then paused ``FINALIZE_SECONDS``, and whose
    provider finalized ``text``: the call and its tentative question."""
    phone = Phone()
    phone.greet()
    phone.say(tone(0.6))
    assert of(phone.ticks(FINALIZE_SECONDS), Finalize)
    [ask] = of(finalized(phone, text), Ask)
    assert ask.tentative
    return phone, ask


def test_after_a_short_silence_the_question_is_asked_early_and_its_audio_held_until_sure() -> None:
    phone = Phone()
    phone.greet()
    phone.say(tone(0.6))
    assert of(phone.ticks(FINALIZE_SECONDS - 0.04), Finalize) == []
    [finalize] = of(phone.ticks(0.04), Finalize)
    [ask] = of(finalized(phone, "how long do I have to return an item"), Ask)
    assert ask.tentative and ask.asked == 1
    effects = phone.answer(ask, "Items can be returned within 30 days. ")
    [speak] = of(effects, Speak)  # synthesis may start: it is only heard once sure
    sent = len(phone.sent)
    phone.synthesize(speak, tone(0.4))
    quiet = ENDPOINT_SECONDS - FINALIZE_SECONDS
    held = phone.ticks(quiet - 0.02)
    assert len(phone.sent) == sent and of(held, Confirm) == []
    effects = phone.ticks(0.02)  # the caller has been silent for the provider's endpointing
    assert Confirm(ask.turn) in effects
    assert len(phone.sent) > sent  # and the answer goes out at once
    assert phone.call.state is State.SPEAKING
    phone.feed(Answered(ask.turn, chat_answer("Items can be returned within 30 days."), phone.now))
    phone.ticks(0.6)
    [record] = of(phone.play_marks(), FinishTurn)
    assert record.record.outcome == "answered"
    assert record.record.stages["transcript_ms"] == round(FINALIZE_SECONDS * 1000)
    assert record.record.stages["voice_to_voice_ms"] == round(ENDPOINT_SECONDS * 1000)


def test_a_caller_who_goes_on_after_a_pause_withdraws_the_early_question_unrecorded() -> None:
    phone, first = asked_early("do you ship")
    effects = phone.say(tone(0.3))  # they were only pausing
    assert Cancel(first.turn) in effects
    assert of(effects, FinishTurn) == [] and of(effects, SendClear) == []
    assert phone.call.state is State.LISTENING
    assert of(phone.ticks(FINALIZE_SECONDS), Finalize)
    [ask] = of(finalized(phone, "to Canada"), Ask)
    assert ask.question == "do you ship to Canada"
    assert ask.asked == 1  # the withdrawn question took no number
    assert Confirm(ask.turn) in phone.ticks(ENDPOINT_SECONDS - FINALIZE_SECONDS)


def test_one_noisy_frame_does_not_withdraw_an_early_question() -> None:
    phone, ask = asked_early("do you ship to Canada")
    assert of(phone.say(tone(0.02)), Cancel) == []
    # the silence counts again from the noise
    assert Confirm(ask.turn) in phone.ticks(ENDPOINT_SECONDS)


def test_the_providers_own_end_of_utterance_makes_an_early_question_sure_at_once() -> None:
    phone, ask = asked_early("do you ship to Canada")
    assert phone.feed(Transcript("", True, True, phone.now)) == [Confirm(ask.turn)]
    # more words with it: one question, the whole of it, and sure
    phone2, early = asked_early("do you ship")
    effects = phone2.feed(Transcript("to Canada", True, True, phone2.now))
    assert Cancel(early.turn) in effects and of(effects, FinishTurn) == []
    [ask] = of(effects, Ask)
    assert ask.question == "do you ship to Canada" and not ask.tentative


def test_a_finalize_the_provider_never_answers_is_asked_with_what_was_heard() -> None:
    phone = Phone()
    phone.greet()
    phone.say(tone(0.6))
    phone.feed(Transcript("do you ship to Canada", True, False, phone.now))  # a final part
    effects = phone.ticks(ASK_ANYWAY_SECONDS - 0.02)
    assert of(effects, Finalize) and of(effects, Ask) == []
    [ask] = of(phone.ticks(0.02), Ask)
    assert ask.question == "do you ship to Canada" and not ask.tentative


def test_interim_and_partial_results_wait_for_the_end_of_the_utterance() -> None:
    phone = Phone()
    phone.greet()
    assert phone.feed(Transcript("how long", False, False, phone.now)) == []
    assert phone.feed(Transcript("how long do I have", True, False, phone.now)) == []
    [ask] = of(phone.feed(Transcript("to return it", True, True, phone.now)), Ask)
    assert ask.question == "how long do I have to return it"
    # an utterance end with nothing heard asks nothing
    phone2 = Phone()
    phone2.greet()
    assert phone2.feed(Transcript("", True, True, phone2.now)) == []


def test_silence_is_asked_about_once_then_the_call_is_closed_politely() -> None:
    phone = Phone()
    phone.greet()
    effects = phone.ticks(SILENCE_SECONDS)
    [prompt] = of(effects, Speak)
    assert prompt.text == STILL_THERE
    phone.synthesize(prompt, tone(0.2))
    phone.ticks(0.4)
    phone.play_marks()
    [goodbye] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert goodbye.text == GOODBYE
    assert phone.call.state is State.CLOSING
    assert of(phone.say(tone(0.3)), Cancel) == []  # the goodbye is not interrupted
    phone.synthesize(goodbye, tone(0.2))
    phone.ticks(0.4)
    [hang_up] = of(phone.play_marks(), HangUp)
    assert phone.call.state is State.ENDED
    assert hang_up.reason


def test_speech_resets_the_silence_clock() -> None:
    phone = Phone()
    phone.greet()
    phone.ticks(SILENCE_SECONDS - 1)
    phone.say(tone(0.2))
    assert of(phone.ticks(SILENCE_SECONDS - 1), Speak) == []


def test_a_hang_up_mid_answer_cancels_the_turn_and_records_it() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    effects = phone.feed(Ended("stop", phone.now))
    assert Cancel(ask.turn) in effects
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "hung up"
    assert phone.call.state is State.ENDED
    assert phone.ticks(1.0) == []
    assert phone.feed(AnswerPiece(ask.turn, "We open at nine. ", phone.now)) == []


def test_a_failed_answer_is_apologised_for_and_the_call_goes_on() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    effects = phone.feed(AnswerNotGiven(ask.turn, "every provider failed", phone.now))
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "failed"
    [apology] = of(effects, Speak)
    assert apology.text == APOLOGY
    phone.synthesize(apology, tone(0.2))
    phone.ticks(0.4)
    phone.play_marks()
    assert phone.call.state is State.LISTENING
    assert of(phone.feed(Transcript("and on Sunday", True, True, phone.now)), Ask)


def test_failed_speech_is_apologised_for_and_a_failed_apology_leaves_silence() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    [speak] = of(phone.feed(AnswerPiece(ask.turn, "We open at nine every day. ", phone.now)), Speak)
    effects = phone.feed(SpeechFailed(ask.turn, speak.part, "HTTP 500", phone.now))
    assert Cancel(ask.turn) in effects
    [apology] = of(effects, Speak)
    assert apology.text == APOLOGY
    effects = phone.feed(SpeechFailed(apology.turn, 0, "HTTP 500", phone.now))
    assert of(effects, Speak) == []
    assert phone.call.state is State.LISTENING


def test_a_lost_listener_is_apologised_for_and_ends_the_call_when_it_keeps_failing() -> None:
    phone = Phone()
    phone.greet()
    [missed] = of(phone.feed(ListenerFailed("closed", phone.now)), Speak)
    assert missed.text == MISSED
    phone.synthesize(missed, tone(0.1))
    phone.ticks(0.3)
    phone.play_marks()
    phone.feed(ListenerFailed("closed", phone.now))
    effects = phone.feed(ListenerFailed("closed", phone.now))
    assert [s.text for s in of(effects, Speak)] == [CANT_HEAR]
    assert phone.call.state is State.CLOSING


def test_a_key_pressed_while_the_bot_talks_stops_it() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    [speak] = of(phone.answer(ask, "We open at nine every weekday. "), Speak)
    phone.synthesize(speak, tone(2.0))
    effects = phone.feed(KeyPressed("1", phone.now))
    assert SendClear() in effects and Cancel(ask.turn) in effects
    assert phone.feed(KeyPressed("2", phone.now)) == []  # listening: keys mean nothing


def test_speech_to_text_is_kept_alive_while_no_caller_audio_is_sent() -> None:
    phone = Phone()
    [speak] = of(phone.start(), Speak)
    phone.synthesize(speak, tone(KEEP_ALIVE_SECONDS + 1, amplitude=12000))
    effects = phone.ticks(KEEP_ALIVE_SECONDS + 0.1, frame=tone(0.02, amplitude=1200), speech=True)
    assert of(effects, Listen) == []
    assert of(effects, KeepListening)


@pytest.mark.parametrize("event", [Tick(1.0), Inbound(SILENT_FRAME, False, 1.0)])
def test_nothing_happens_before_the_stream_starts(event: Any) -> None:
    assert Call(GREETING).receive(event) == []


# ---------------------------------------------------------------- the service stops


def chat_answer(text: str) -> ChatAnswer:
    return ChatAnswer(text, (), "support", "x", "y")


def stop(phone: Phone, within: float = 8.0) -> list[Any]:
    return phone.feed(Stopping(phone.now + within, phone.now))


def closed(phone: Phone, closing: Speak) -> HangUp:
    """The closing words synthesized and played; the hang-up that follows."""
    assert closing.text == SHUTTING_DOWN
    assert phone.call.state is State.CLOSING
    phone.synthesize(closing, tone(0.3))
    phone.ticks(0.5)
    [hang_up] = of(phone.play_marks(), HangUp)
    assert phone.call.state is State.ENDED
    return hang_up


def test_a_stop_while_the_caller_has_the_floor_says_the_closing_words_and_hangs_up() -> None:
    phone = Phone()
    phone.greet()
    phone.say(tone(0.4))  # the caller has begun a question
    phone.feed(Transcript("how long do I", True, False, phone.now))
    [closing] = of(stop(phone), Speak)
    # nothing more is asked, and nothing interrupts the closing words
    assert of(phone.feed(Transcript("have to return it", True, True, phone.now)), Ask) == []
    assert of(phone.say(tone(0.5)), Cancel) == []
    assert closed(phone, closing).reason == SHUTDOWN_REASON
    assert stop(phone) == []


def test_a_stop_mid_answer_lets_the_sentence_being_heard_end_and_says_no_more_of_it() -> None:
    phone = Phone()
    phone.greet()
    before = len(phone.sent)
    ask = phone.ask("how long do I have to return an item")
    text = "Items can be returned within thirty days. Refunds take five business days. "
    first, second = of(phone.answer(ask, text), Speak)
    phone.synthesize(first, tone(1.0))
    phone.synthesize(second, tone(1.0))
    phone.ticks(0.4)
    effects = stop(phone)
    assert effects == []  # no clear: the first sentence plays on
    assert of(phone.answer(ask, "Exchanges are free too. "), Speak) == []  # the rest unsaid
    phone.ticks(1.0)
    # the first sentence went out whole, the second not at all
    assert phone.sent[before:] == [tone(1.0)[i : i + FRAME_BYTES] for i in range(0, 8000, 160)]
    assert phone.marks == [f"{ask.turn}.0"]
    effects = phone.play_marks()
    assert Cancel(ask.turn) in effects  # the model and the speech of the rest stop
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "interrupted"
    [closing] = of(effects, Speak)
    assert closed(phone, closing).reason == SHUTDOWN_REASON


def test_a_stop_while_the_answer_is_written_lets_its_first_sentence_be_said() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    assert stop(phone) == []
    text = "Items can be returned within thirty days. Refunds take five business days."
    [first] = of(phone.feed(Answered(ask.turn, chat_answer(text), phone.now)), Speak)
    assert first.text == "Items can be returned within thirty days."
    # its audio comes in two pieces, the last after the stop
    phone.feed(SpeechAudio(ask.turn, first.part, tone(0.3), phone.now))
    phone.ticks(0.1)
    phone.synthesize(first, tone(0.3))
    phone.ticks(0.8)
    effects = phone.play_marks()
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "interrupted"  # the second sentence was not said
    assert record.record.answer == text
    [closing] = of(effects, Speak)
    closed(phone, closing)


def test_an_answer_said_whole_before_the_stop_is_recorded_as_answered() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    text = "Items can be returned within thirty days."
    [only] = of(phone.feed(Answered(ask.turn, chat_answer(text), phone.now)), Speak)
    phone.synthesize(only, tone(0.4))
    phone.ticks(0.2)
    assert stop(phone) == []
    phone.ticks(0.4)
    effects = phone.play_marks()
    assert Cancel(ask.turn) not in effects
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "answered"
    [closing] = of(effects, Speak)
    closed(phone, closing)


def test_a_stop_just_after_a_sentence_went_out_clears_the_next_ones_beginning() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    text = "Items can be returned within thirty days. Refunds take five business days. "
    first, second = of(phone.answer(ask, text), Speak)
    phone.synthesize(first, tone(0.2))
    phone.synthesize(second, tone(1.0))
    phone.ticks(0.2)  # the first sentence's mark is out, and 100 ms of the second
    assert phone.marks == [f"{ask.turn}.0"]
    assert stop(phone) == [SendClear()]
    sent = len(phone.sent)
    # the provider gives back the mark the clear passed: the closing words follow
    effects = phone.feed(MarkPlayed(f"{ask.turn}.0", phone.now))
    [closing] = of(effects, Speak)
    phone.ticks(0.5)
    assert len(phone.sent) == sent  # nothing more of the second sentence
    closed(phone, closing)


def test_a_sentence_that_would_not_end_in_time_is_cut_for_the_closing_words() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    [first] = of(phone.answer(ask, "Items can be returned within thirty days. "), Speak)
    phone.synthesize(first, tone(6.0))
    phone.ticks(0.5)
    assert stop(phone, within=1.0) == []
    assert of(phone.ticks(0.9), Speak) == []
    effects = phone.ticks(0.2)
    assert SendClear() in effects and Cancel(ask.turn) in effects
    [record] = of(effects, FinishTurn)
    assert record.record.outcome == "interrupted"
    [closing] = of(effects, Speak)
    phone.marks.clear()  # the clear drops the first sentence's mark
    closed(phone, closing)


def test_neither_speech_nor_a_key_interrupts_the_last_sentence() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    [first] = of(phone.answer(ask, "Items can be returned within thirty days. "), Speak)
    phone.synthesize(first, tone(2.0))
    phone.ticks(0.2)
    stop(phone)
    effects = phone.say(tone(0.5, amplitude=16000)) + phone.feed(KeyPressed("1", phone.now))
    assert of(effects, Cancel) == [] and of(effects, SendClear) == []
    phone.ticks(2.0)
    [closing] = of(phone.play_marks(), Speak)
    closed(phone, closing)


def test_the_greeting_not_yet_begun_gives_way_to_the_closing_words() -> None:
    phone = Phone()
    [greeting] = of(phone.start(), Speak)
    effects = stop(phone)
    assert Cancel(greeting.turn) in effects
    [closing] = of(effects, Speak)
    closed(phone, closing)
    # a stream that starts after the stop hears the closing words, not the greeting
    late = Call(GREETING)
    assert late.receive(Stopping(8.0, 0.0)) == []
    [said] = of(late.receive(Started("MZ2", "CA2", "+15551234567", 0.1)), Speak)
    assert said.text == SHUTTING_DOWN


def test_a_failure_during_a_stop_goes_straight_to_the_closing_words() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("how long do I have to return an item")
    stop(phone)
    effects = phone.feed(AnswerNotGiven(ask.turn, "every provider failed", phone.now))
    [closing] = of(effects, Speak)
    assert closing.text == SHUTTING_DOWN
    assert of(phone.feed(ListenerFailed("closed", phone.now)), Speak) == []
    # closing words that cannot be said: hang up at once
    [hang_up] = of(phone.feed(SpeechFailed(closing.turn, 0, "HTTP 500", phone.now)), HangUp)
    assert hang_up.reason == SHUTDOWN_REASON


def test_a_goodbye_already_under_way_is_finished_as_it_was() -> None:
    phone = Phone()
    phone.greet()
    [prompt] = of(phone.ticks(SILENCE_SECONDS), Speak)
    phone.synthesize(prompt, tone(0.2))
    phone.ticks(0.4)
    phone.play_marks()
    [goodbye] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert stop(phone) == []
    phone.synthesize(goodbye, tone(0.2))
    phone.ticks(0.4)
    [hang_up] = of(phone.play_marks(), HangUp)
    assert hang_up.reason != SHUTDOWN_REASON


@pytest.mark.parametrize(
    ("grace", "within"), [(20.0, 8.0), (100.0, 8.0), (12.0, 4.0), (5.0, 0.0), (0.0, 0.0)]
)
def test_the_sentence_under_way_gets_what_the_grace_leaves_beside_the_closing_words(
    grace: float, within: float
) -> None:
    assert finish_within(grace) == within


# ---------------------------------------------------------------- events out of place


def a_mark_before_the_start(phone: Phone) -> CallEvent:
    return MarkPlayed("1.0", phone.now)


def words_before_the_start(phone: Phone) -> CallEvent:
    return Transcript("what are your opening hours", True, True, phone.now)


def a_second_start(phone: Phone) -> CallEvent:
    phone.greet()
    return Started("MZ1", "CA1", "+15551234567", phone.now)


def an_answer_to_the_goodbye(phone: Phone) -> CallEvent:
    phone.greet()
    for _ in range(MAX_LISTENER_FAILURES):
        effects = phone.feed(ListenerFailed("closed", phone.now))
    [goodbye] = of(effects, Speak)
    assert phone.call.state is State.CLOSING
    return Answered(goodbye.turn, chat_answer("We open at nine."), phone.now)


@pytest.mark.parametrize(
    "happened",
    [a_mark_before_the_start, words_before_the_start, a_second_start, an_answer_to_the_goodbye],
)
def test_an_event_its_state_does_not_expect_raises_and_changes_nothing(happened: Any) -> None:
    phone = Phone()
    event = happened(phone)
    state, turn = phone.call.state, phone.call.turn
    with pytest.raises(UnexpectedEvent) as raised:
        phone.feed(event)
    assert raised.value.state is state and raised.value.event is event
    # the message names the event's type and the state, never what the event carries
    assert str(raised.value) == f"{type(event).__name__} while {state.value}: not expected"
    assert phone.call.state is state and phone.call.turn is turn
    phone.ticks(0.1)  # and the call goes on


def late_news(kind: type, turn: int, at: float) -> CallEvent:
    """An event of ``kind`` for ``turn``."""
    events: dict[type, CallEvent] = {
        AnswerPiece: AnswerPiece(turn, "And on Saturdays at ten. ", at),
        Answered: Answered(turn, chat_answer("We open at nine."), at),
        AnswerNotGiven: AnswerNotGiven(turn, "every provider failed", at),
        SpeechAudio: SpeechAudio(turn, 0, tone(0.2), at),
        SpeechDone: SpeechDone(turn, 0, at),
        SpeechFailed: SpeechFailed(turn, 0, "HTTP 500", at),
    }
    return events[kind]


@pytest.mark.parametrize("kind", TURN_EVENTS)
def test_a_turn_no_longer_under_way_has_its_late_news_dropped_without_complaint(
    kind: type,
) -> None:
    """Whatever the state: listening after a barge-in, the next turn under way, the end."""
    phone = Phone()
    phone.greet()
    ask = phone.ask("what are your opening hours")
    [speak] = of(phone.answer(ask, "We open at nine every weekday. "), Speak)
    phone.synthesize(speak, tone(3.0))
    phone.ticks(0.5)
    phone.say(tone(0.2, amplitude=8000, hertz=300))  # a barge-in
    assert phone.call.state is State.LISTENING
    assert phone.feed(late_news(kind, ask.turn, phone.now)) == []
    [again] = of(phone.feed(Transcript("and on Saturdays", True, True, phone.now)), Ask)
    assert phone.call.state is State.ANSWERING
    assert phone.feed(late_news(kind, ask.turn, phone.now)) == []
    phone.feed(Ended("the caller hung up", phone.now))
    assert phone.call.state is State.ENDED
    assert phone.feed(late_news(kind, again.turn, phone.now)) == []


def test_after_the_end_what_was_still_under_way_is_taken_without_complaint() -> None:
    """The runner's tasks and the provider's socket deliver what was in flight until the
    call's nursery is cancelled: the stream's end after a hang-up among it."""
    phone = Phone()
    phone.greet()
    phone.feed(Ended("the caller hung up", phone.now))
    at = phone.now
    for event in (
        Inbound(tone(0.02), True, at),
        MarkPlayed("1.0", at),
        KeyPressed("1", at),
        Tick(at),
        Transcript("goodbye", True, True, at),
        ListenerFailed("closed", at),
        Stopping(at + 8.0, at),
        Ended("the media stream closed", at),
    ):
        assert phone.feed(event) == []
    assert phone.call.state is State.ENDED


def test_a_question_is_numbered_as_its_conversations_turn_and_finished_there() -> None:
    """The call numbers its questions after those its conversation already has (a stream
    that reconnected); the question's Ask and its end carry that number, and its end is
    that turn of the call's conversation, saying how it ended."""
    phone = Phone()
    phone.call = Call(GREETING, asked_before=2)
    phone.greet()
    ask = phone.ask("what are your hours")
    assert ask.asked == 3
    effects = phone.answer(ask, "Nine to five.")
    effects += phone.feed(
        Answered(ask.turn, ChatAnswer("Nine to five.", (), "support", "openai", "gpt"), phone.now)
    )
    [speak] = of(effects, Speak)
    phone.synthesize(speak, tone(0.3))
    phone.ticks(0.5)
    effects = phone.play_marks()
    [finish] = of(effects, FinishTurn)
    assert finish.record.turn == 3
    kept = finish.record.in_conversation("CA1", "+15551234567")
    assert (kept.channel, kept.turn, kept.outcome) == ("voice", 3, "answered")
    assert kept.continuation == place_key("voice", "CA1")
    assert (kept.question, kept.answer, kept.participant) == (
        "what are your hours",
        "Nine to five.",
        "+15551234567",
    )
    cut = attrs.evolve(finish.record, outcome="hung up", answer="", answer_detail=None)
    assert cut.in_conversation("CA1", "").outcome == "hung up"
