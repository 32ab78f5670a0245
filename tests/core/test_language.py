from ragcore.language import LanguageGuess, LanguagePolicy, choose_language, worth_detecting

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
