import pytest

from ragcore.language import (
    LanguageGuess,
    LanguagePolicy,
    asked_in,
    choose_language,
    function_word_language,
    needs_detecting,
    worth_detecting,
)

GERMAN = LanguageGuess("de", "German", 0.92)


def test_a_confident_guess_is_taken():
    assert choose_language([GERMAN], LanguagePolicy()) == "de"


def test_a_guess_under_the_threshold_falls_back_to_the_default():
    assert choose_language([GERMAN], LanguagePolicy(default="fr", threshold=0.95)) == "fr"


def test_a_guess_outside_the_supported_languages_falls_back():
    assert choose_language([GERMAN], LanguagePolicy(supported=("en", "fr"))) == "en"


def test_no_guess_falls_back():
    assert choose_language([], LanguagePolicy(default="nl")) == "nl"


def test_very_short_messages_are_not_worth_detecting():
    assert not worth_detecting("ok")
    assert not worth_detecting("Hi there!")
    assert worth_detecting("Wann öffnet der Laden?")


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Who won the 2018 FIFA World Cup?", "en"),
        ("Where is my order 4411?", None),  # one English word of three letters or more
        ("Order 4411 status?", None),  # no function word tells nothing
        ("The FIFA World Cup 2018 winner?", None),  # nor does one
        ("What is in the box?", "en"),  # "is" and "in" are Dutch too, and short
        # "wie" is Dutch too, and left out: "kann", "ich", "ein" and "auf" tell German
        ("Wie kann ich ein Paket auf seiner Version halten?", "de"),
        ("Kann ich das Paket auf seiner Version halten?", "de"),
        ("Où est ma commande, et quand arrive-t-elle ?", "fr"),
        # "está" and "para" are Portuguese too, "del" Italian: one word of its own is not enough
        ("¿Dónde está mi pedido y para cuándo llega del almacén?", None),
        ("¿Cuándo llega mi pedido y cuál es el estado?", "es"),
        ("Quale modulo devo caricare per servire il mio sito?", "it"),
        ("Como faço para o Apache não mostrar a versão?", "pt"),
        ("Is er een probleem met mijn bestelling?", "nl"),
        ("Comment activer un module Apache ?", None),
        # Portuguese: "do", "a" and "para" must not make it English or Spanish
        ("Qual é o preço do pacote para a empresa?", None),
        ("Como posso saber qual é a versão do pacote que está instalada?", None),
        ("", None),
    ],
)
def test_function_words_tell_a_questions_language_or_nothing(text, language):
    assert function_word_language(text) == language


VIETNAMESE = [LanguageGuess("vi", "Vietnamese", 0.99)]  # lingua's low-accuracy guess


def test_function_words_win_over_the_detectors_guess_for_a_short_question():
    question = "Who won the 2018 FIFA World Cup?"
    assert choose_language(VIETNAMESE, LanguagePolicy(), question) == "en"
    assert asked_in(question, VIETNAMESE, LanguagePolicy()) == "en"
    # with nothing told by the words, the guess stands, as before
    assert choose_language(VIETNAMESE, LanguagePolicy(), "FIFA 2018?") == "vi"
    assert asked_in("FIFA 2018?", VIETNAMESE, LanguagePolicy()) == "vi"


def test_function_words_of_an_unsupported_language_are_not_answered_in():
    policy = LanguagePolicy(default="en", supported=("en", "fr"))
    guess = [LanguageGuess("fr", "French", 0.9)]
    assert choose_language(guess, policy, "Kann ich das Paket halten?") == "fr"
    # the question is German all the same, for a rule measured in one language
    assert asked_in("Kann ich das Paket halten?", guess, policy) == "de"


@pytest.mark.parametrize(
    ("text", "supported", "needed"),
    [
        ("Who won the 2018 FIFA World Cup?", (), False),  # its words tell English
        ("Kann ich das Paket halten?", (), False),  # German
        ("Kann ich das Paket halten?", ("en", "fr"), True),  # German, not answered in
        ("Comment activer un module Apache ?", (), True),  # nothing told by the words
        ("ok thanks", (), False),  # too short to tell: the default language
    ],
)
def test_the_detector_is_asked_only_when_the_words_do_not_tell(text, supported, needed):
    """Where the function words tell a language answers may be given in, whatever the
    detector would guess, ``choose_language`` and ``asked_in`` give the same."""
    policy = LanguagePolicy(supported=supported)
    assert needs_detecting(text, policy) is needed
    if not needed and worth_detecting(text):
        for guesses in ([], VIETNAMESE):
            assert choose_language(guesses, policy, text) == choose_language([], policy, text)
            assert asked_in(text, guesses, policy) == asked_in(text, [], policy)
