"""The call's own words follow the caller's language: the configured one before they
speak, then the language of what they last said. No network, no clock."""

from __future__ import annotations

import pytest

from ragcore.chat.pipeline import ChatAnswer
from ragcore.employees.profile import Profile
from ragcore.voice import phrases
from ragcore.voice.call import (
    GOODBYE,
    SILENCE_SECONDS,
    STILL_THERE,
    Answered,
    AnswerNotGiven,
    HangUp,
    ListenerFailed,
    Speak,
    State,
    Stopping,
)
from ragcore.voice.greeting import greeting
from ragcore.voice.phrases import PHRASES, call_language, caller_language, phrase
from tests.core.test_voice_call import Phone, of, tone


def _heard(phone: Phone, speak: Speak) -> list:
    phone.synthesize(speak, tone(0.2))
    phone.ticks(0.4)
    return phone.play_marks()


def _answered(phone: Phone, question: str, text: str, language: str | None) -> None:
    ask = phone.ask(question)
    answer = ChatAnswer(text, (), None, None, None, language=language)
    [speak] = of(phone.feed(Answered(ask.turn, answer, phone.now)), Speak)
    _heard(phone, speak)
    assert phone.call.state is State.LISTENING


def test_every_phrase_exists_in_every_language_and_differs_from_english() -> None:
    assert set(PHRASES) == {"en", "de", "fr", "es", "it", "nl", "pt"}
    for language, words in PHRASES.items():
        assert set(words) == set(PHRASES["en"])
        if language != "en":
            assert all(words[name] != PHRASES["en"][name] for name in words)
    assert phrase(phrases.GOODBYE, "ja") == GOODBYE  # no Japanese: English


def test_a_german_caller_who_goes_silent_hears_german_prompts_and_goodbye() -> None:
    phone = Phone()  # configured for English
    phone.greet()
    _answered(
        phone,
        "wie lange dauert der Versand nach Österreich",
        "Der Versand dauert drei Tage.",
        "de",
    )
    [prompt] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert prompt.text == PHRASES["de"][phrases.STILL_THERE]
    assert prompt.text.startswith("Sind Sie noch da?")
    _heard(phone, prompt)
    [goodbye] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert goodbye.text == PHRASES["de"][phrases.GOODBYE]
    assert "Auf Wiederhören" in goodbye.text
    _heard(phone, goodbye)
    assert phone.call.state is State.ENDED


def test_before_the_caller_speaks_the_configured_language_is_used() -> None:
    phone = Phone(language="fr")
    phone.greet()
    [prompt] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert prompt.text == PHRASES["fr"][phrases.STILL_THERE]
    english = Phone()
    english.greet()
    [prompt] = of(english.ticks(SILENCE_SECONDS), Speak)
    assert prompt.text == STILL_THERE


def test_the_language_follows_what_the_caller_said_last() -> None:
    phone = Phone(language="de")
    phone.greet()
    _answered(phone, "how long does shipping to Austria take", "Three days.", "en")
    assert phone.call.language == "en"
    # a short reply tells nothing: the language stays
    _answered(phone, "ok", "Fine.", "de")
    assert phone.call.language == "en"
    _answered(phone, "y cuánto cuesta el envío a España", "Cuesta cinco euros.", "es")
    [prompt] = of(phone.ticks(SILENCE_SECONDS), Speak)
    assert prompt.text == PHRASES["es"][phrases.STILL_THERE]


def test_a_failed_answer_is_apologised_for_in_the_questions_language() -> None:
    # the answer never came, so its language is not known: the question's words tell
    phone = Phone()
    phone.greet()
    ask = phone.ask("wo ist meine Bestellung und wann kommt sie an")
    effects = phone.feed(AnswerNotGiven(ask.turn, "every provider failed", phone.now))
    [apology] = of(effects, Speak)
    assert apology.text == PHRASES["de"][phrases.APOLOGY]


def test_an_empty_answer_and_a_lost_listener_are_said_in_the_callers_language() -> None:
    phone = Phone()
    phone.greet()
    ask = phone.ask("waar is mijn bestelling van vorige week")
    answer = ChatAnswer("", (), None, None, None, language="nl")
    [speak] = of(phone.feed(Answered(ask.turn, answer, phone.now)), Speak)
    assert speak.text == PHRASES["nl"][phrases.NO_ANSWER]
    _heard(phone, speak)
    [missed] = of(phone.feed(ListenerFailed("closed", phone.now)), Speak)
    assert missed.text == PHRASES["nl"][phrases.MISSED]


def test_the_closing_words_of_a_stop_are_in_the_callers_language() -> None:
    phone = Phone()
    phone.greet()
    _answered(phone, "dove si trova il mio ordine di ieri", "È in viaggio.", "it")
    [closing] = of(phone.feed(Stopping(phone.now + 8, phone.now)), Speak)
    assert closing.text == PHRASES["it"][phrases.SHUTTING_DOWN]
    assert of(_heard(phone, closing), HangUp)


def test_the_call_language_before_anyone_speaks() -> None:
    assert call_language("de-DE", "fr", "en") == "de"
    assert call_language("multi", "fr", "en") == "fr"
    assert call_language("multi", "", "pt") == "pt"
    assert call_language("multi", "ja", "ja") == "en"
    assert call_language() == "en"


def test_the_callers_language_needs_something_to_tell_it() -> None:
    assert caller_language("where is my parcel going today", "en") == "en"
    assert caller_language("ja", "de") is None  # too short to detect
    assert caller_language("where is it", None) is None
    assert caller_language("ist sie noch nicht da", None) == "de"  # function words
    assert caller_language("where is my parcel going today", "ja") is None


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("en", "Hello, this is Ava, the virtual assistant. I can answer your questions "
         "about garden furniture. What would you like to know?"),
        ("de", "Hallo, hier ist Ava, die virtuelle Assistenz. Ich beantworte Ihre Fragen "
         "zu garden furniture. Was möchten Sie wissen?"),
    ],
)  # fmt: skip
def test_the_built_greeting_is_in_the_calls_language(language: str, expected: str) -> None:
    profile = Profile(products="garden furniture")
    assert greeting("", "Ava", profile, language) == expected


def test_the_built_greeting_falls_back_to_english_and_a_configured_one_is_kept() -> None:
    assert greeting("", "", None, "ja").startswith("Hello, this is the virtual assistant.")
    for language in PHRASES:
        assert greeting("", "", None, language) != greeting("", "", None, "en") or (
            language == "en"
        )
    assert greeting("Grüß Gott!", "Ava", None, "fr") == "Grüß Gott!"
