"""Greetings, thanks and goodbyes get a short reply in their own language, and nothing
more than such words does."""

import pytest

from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.chat.small_talk import PHRASES, REPLIES, small_talk
from ragcore.language import NOT_FOUND, LanguagePolicy
from tests.core.drive import drive

POLICY = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2)


@pytest.mark.parametrize(
    ("text", "kind", "language"),
    [
        ("hi", "greeting", "en"),
        ("Hello there!", "greeting", "en"),
        ("Good morning :)", "greeting", "en"),
        ("hello?", "greeting", "en"),
        ("Thanks a lot!", "thanks", "en"),
        ("ok, thank you so much", "thanks", "en"),
        ("Hi, thanks!", "thanks", "en"),
        ("bye!", "goodbye", "en"),
        ("Bonjour !", "greeting", "fr"),
        ("merci beaucoup", "thanks", "fr"),
        ("Grüß Gott", "greeting", "de"),
        ("Danke schön!", "thanks", "de"),
        ("Vielen Dank", "thanks", "de"),
        ("¡Muchas gracias!", "thanks", "es"),
        ("Buenos días", "greeting", "es"),
        ("grazie mille", "thanks", "it"),
        ("Dank je wel", "thanks", "nl"),
        ("Olá", "greeting", "pt"),
        ("muito obrigada", "thanks", "pt"),
        ("Dziękuję", "thanks", "pl"),
        ("wie geht’s?", "greeting", "de"),
    ],
)
def test_small_talk_is_told_with_its_language(text, kind, language):
    talk = small_talk(text)
    assert talk is not None and (talk.kind, talk.language) == (kind, language)


@pytest.mark.parametrize(
    "text",
    [
        "Hi, how long do I have to return an item?",
        "thanks, and what about shipping?",
        "hello, is order 4411 on its way",
        "ok",
        "great",
        "no thanks",
        "yes please",
        "Hi hi hi hi hi hi hi hi hi",  # more words than small talk has
        "Thank you for the invoice, when is it due",
        "",
        "?!",
    ],
)
def test_anything_more_is_a_question(text):
    assert small_talk(text) is None


def test_a_word_of_two_languages_is_read_in_the_default_one_first():
    assert small_talk("hallo").language == "de"  # German before Dutch
    assert small_talk("hallo", LanguagePolicy(default="nl")).language == "nl"
    assert small_talk("hi", LanguagePolicy(default="de")).language == "de"


def test_an_unsupported_language_is_answered_in_the_default_one():
    talk = small_talk("merci", LanguagePolicy(default="de", supported=("de", "en")))
    assert talk.language == "de" and talk.reply == REPLIES["de"]["thanks"]


def test_every_language_replies_to_every_kind():
    assert set(REPLIES) == set(PHRASES) <= set(NOT_FOUND)
    for language, kinds in PHRASES.items():
        assert set(REPLIES[language]) == set(kinds) == {"greeting", "thanks", "goodbye"}


def test_the_pipeline_replies_without_searching_or_asking_a_model():
    def nothing(effect):
        raise AssertionError(f"small talk asked for {effect}")

    outcome, effects = drive(answer_question(ChatRequest("Merci beaucoup !"), POLICY), nothing)
    assert effects == []
    assert outcome.answer == REPLIES["fr"]["thanks"]
    assert (outcome.citations, outcome.provider, outcome.language) == ((), None, "fr")
