"""A call handed to a person (docs/handoff.md): put through to VOICE_TRANSFER_NUMBER once
the caller has heard the notice, or, without one (or when the transfer fails), a message
box that acknowledges each held utterance. No network, no clock."""

from __future__ import annotations

from typing import Any

from ragcore.chat.pipeline import ChatAnswer
from ragcore.voice import phrases
from ragcore.voice.call import (
    GOODBYE,
    MESSAGE_TAKEN,
    PUTTING_THROUGH,
    SHUTTING_DOWN,
    SILENCE_SECONDS,
    STILL_THERE,
    TRANSFER_FAILED,
    TRANSFERRED_REASON,
    TRANSFERRED_STREAM_SECONDS,
    Answered,
    Call,
    Ended,
    FinishTurn,
    HangUp,
    Inbound,
    KeyPressed,
    Listen,
    MarkPlayed,
    Speak,
    State,
    Stopping,
    Tick,
    Transcript,
    TransferCall,
    TransferFailed,
    Transferred,
)
from tests.core.test_voice_call import GREETING, Phone, of, tone

NUMBER = "+15550001111"
NOTICE = "I'll put you through to a person from Acme now."
MESSAGE_NOTICE = (
    "Nobody from Acme can come to the phone right now. Please leave your message after "
    "this, and they will get back to you."
)


def handing_over(text: str, language: str = "en") -> ChatAnswer:
    """The turn that hands the conversation to a person: its notice is said."""
    return ChatAnswer(text, (), "support", None, None, language=language, mode="human")


def held(language: str = "en") -> ChatAnswer:
    """A turn while a person answers: no answer, the caller's words wait for them."""
    return ChatAnswer("", (), "support", None, None, language=language, mode="human", held=True)


def phone_with(transfer_to: str = "") -> Phone:
    phone = Phone()
    phone.call = Call(GREETING, transfer_to=transfer_to)
    phone.greet()
    return phone


def answered(phone: Phone, question: str, answer: ChatAnswer) -> Speak:
    """Ask ``question``, get ``answer``: what the call says (one sentence), synthesized."""
    ask = phone.ask(question)
    [speak, *rest] = of(phone.feed(Answered(ask.turn, answer, phone.now)), Speak)
    for more in rest:
        phone.synthesize(more, tone(0.2))
    phone.synthesize(speak, tone(0.2))
    return speak


def heard(phone: Phone) -> list[Any]:
    """Play what was sent to its end: its marks come back."""
    effects = phone.ticks(0.5)
    return effects + phone.play_marks()


def test_the_call_is_put_through_once_the_notice_is_heard_and_not_before() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "I want to talk to a person", handing_over(NOTICE))
    before = phone.ticks(0.5)  # the notice plays; its mark has not come back
    assert of(before, TransferCall) == []
    assert phone.call.state is State.SPEAKING
    effects = phone.play_marks()
    assert of(effects, TransferCall) == [TransferCall(NUMBER)]
    [finish] = of(effects, FinishTurn)  # the handing-over turn is recorded as usual
    assert (finish.record.outcome, finish.record.answer) == ("answered", NOTICE)
    assert phone.call.state is State.TRANSFERRING
    # meanwhile the caller talks to no one here: nothing is transcribed or asked
    quiet = phone.say(tone(0.4)) + phone.ticks(SILENCE_SECONDS * 3)
    quiet += phone.feed(Transcript("hello", True, True, phone.now))
    quiet += phone.feed(KeyPressed("1", phone.now)) + phone.feed(MarkPlayed("9.0", phone.now))
    assert of(quiet, Listen) == [] and of(quiet, Speak) == [] and of(quiet, HangUp) == []
    assert phone.feed(Transferred(phone.now)) == []
    assert phone.call.transferred == phone.now
    phone.feed(Ended("the caller hung up", phone.now))  # the provider closes the stream
    assert phone.call.state is State.ENDED


def test_a_stream_the_provider_leaves_open_after_taking_the_call_is_hung_up_here() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "I want to talk to a person", handing_over(NOTICE))
    heard(phone)
    phone.feed(Transferred(phone.now))
    assert of(phone.ticks(TRANSFERRED_STREAM_SECONDS - 0.1), HangUp) == []
    [hang_up] = of(phone.ticks(0.2), HangUp)
    assert hang_up.reason == TRANSFERRED_REASON
    assert phone.call.state is State.ENDED


def test_answers_with_the_ai_never_transfer_even_with_a_number() -> None:
    phone = phone_with(NUMBER)
    hours = ChatAnswer("Nine to five.", (), None, None, None)
    answered(phone, "what are your opening hours", hours)
    effects = heard(phone)
    assert of(effects, TransferCall) == []
    assert phone.call.state is State.LISTENING


def test_a_caller_who_talks_over_the_notice_is_put_through_after_their_next_words() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "I want to talk to a person", handing_over(NOTICE))
    phone.ticks(0.1)
    cut = phone.say(tone(0.2, amplitude=8000, hertz=300))  # a barge-in: not all heard
    assert of(cut, TransferCall) == [] and phone.call.state is State.LISTENING
    # their next words are held for the person; the call says it puts them through
    speak = answered(phone, "hello are you there", held())
    assert speak.text == PUTTING_THROUGH
    assert of(heard(phone), TransferCall) == [TransferCall(NUMBER)]


def test_without_a_number_each_held_utterance_is_acknowledged_in_the_callers_language() -> None:
    phone = phone_with()
    notice = answered(phone, "I want to talk to a person", handing_over(MESSAGE_NOTICE))
    assert notice.text.startswith("Nobody from Acme")
    effects = heard(phone)
    assert of(effects, TransferCall) == [] and phone.call.state is State.LISTENING
    speak = answered(phone, "please call me back about my order", held())
    assert speak.text == MESSAGE_TAKEN
    [finish] = of(heard(phone), FinishTurn)
    assert finish.record.question == "please call me back about my order"
    assert finish.record.answer_detail is not None and finish.record.answer_detail.held
    german = answered(phone, "bitte rufen Sie mich wegen meiner Bestellung zurück", held("de"))
    assert german.text == phrases.phrase(phrases.MESSAGE_TAKEN, "de")
    heard(phone)
    assert phone.call.state is State.LISTENING


def test_silence_after_a_message_ends_the_call_politely_as_always() -> None:
    phone = phone_with()
    answered(phone, "I want to talk to a person", handing_over(MESSAGE_NOTICE))
    heard(phone)
    answered(phone, "please call me back", held())
    heard(phone)
    [prompt] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert prompt.text == STILL_THERE
    phone.synthesize(prompt, tone(0.2))
    heard(phone)
    [goodbye] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert goodbye.text == GOODBYE
    phone.synthesize(goodbye, tone(0.2))
    assert of(heard(phone), HangUp)


def test_a_failed_transfer_is_said_and_the_call_takes_a_message_instead() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "I want to talk to a person", handing_over(NOTICE))
    heard(phone)
    assert phone.call.state is State.TRANSFERRING
    [sorry] = of(phone.feed(TransferFailed("HTTP 400: Call is not in-progress", phone.now)), Speak)
    assert sorry.text == TRANSFER_FAILED
    phone.synthesize(sorry, tone(0.2))
    assert of(heard(phone), FinishTurn) == []  # scripted words, not a turn
    assert phone.call.state is State.LISTENING
    speak = answered(phone, "please call me back", held())
    assert speak.text == MESSAGE_TAKEN  # no second attempt: the caller leaves a message
    effects = heard(phone)
    assert of(effects, TransferCall) == [] and phone.call.state is State.LISTENING
    assert phone.call.transferred is None


def test_a_failed_transfer_is_said_in_the_callers_language() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "ich möchte mit einem Mitarbeiter sprechen", handing_over(NOTICE, "de"))
    heard(phone)
    [sorry] = of(phone.feed(TransferFailed("timed out", phone.now)), Speak)
    assert sorry.text == phrases.phrase(phrases.TRANSFER_FAILED, "de")


def test_a_stop_while_the_transfer_is_under_way_waits_for_its_outcome() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "I want to talk to a person", handing_over(NOTICE))
    heard(phone)
    assert phone.feed(Stopping(phone.now + 8.0, phone.now)) == []
    assert phone.call.state is State.TRANSFERRING  # put through, the caller needs us no more
    # not taken: the closing words, then the call is hung up
    [closing] = of(phone.feed(TransferFailed("timed out", phone.now)), Speak)
    assert closing.text == SHUTTING_DOWN
    phone.synthesize(closing, tone(0.2))
    assert of(heard(phone), HangUp)


def test_news_of_a_transfer_after_the_caller_hung_up_is_taken_without_complaint() -> None:
    phone = phone_with(NUMBER)
    answered(phone, "I want to talk to a person", handing_over(NOTICE))
    heard(phone)
    phone.feed(Ended("the caller hung up", phone.now))
    assert phone.feed(Transferred(phone.now)) == []
    assert phone.feed(TransferFailed("HTTP 400", phone.now)) == []
    assert phone.feed(Tick(phone.now)) == [] and phone.feed(Inbound(tone(0.02), True, 1)) == []
    assert phone.call.state is State.ENDED
