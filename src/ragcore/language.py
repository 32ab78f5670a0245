"""Which language to answer in (behaviour rule 8).

The detector (lingua, in ragio) proposes languages with confidences; this rule
decides. Very short messages ("ok", "hi") say too little to detect, and a
guess under the confidence threshold is no better: both fall back to
DEFAULT_LANGUAGE.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from ragcore.effects import Effect

#: messages with fewer letters than this fall back to the default language
MIN_LETTERS = 12


@attrs.frozen
class LanguageGuess:
    code: str  # ISO 639-1, lowercase
    name: str  # English name, e.g. "German"
    confidence: float


@attrs.frozen
class DetectLanguage(Effect[list[LanguageGuess]]):
    """Guess the language of ``text``. Result: ``LanguageGuess``es, best first."""

    runs_ahead = True

    text: str


@attrs.frozen
class LanguagePolicy:
    default: str = "en"
    threshold: float = 0.7
    supported: tuple[str, ...] = ()  # empty: any language


def worth_detecting(text: str) -> bool:
    return sum(ch.isalpha() for ch in text) >= MIN_LETTERS


def needs_detecting(text: str, policy: LanguagePolicy) -> bool:
    """Whether the detector has anything to add to ``choose_language`` and ``asked_in``:
    not for a text too short to tell, nor for one whose function words already tell a
    language answers may be given in (both take those first). Most questions in the
    languages of ``FUNCTION_WORDS`` skip the detector: ~0.5 ms of CPU an answer."""
    if not worth_detecting(text):
        return False
    told = function_word_language(text)
    return told is None or (bool(policy.supported) and told not in policy.supported)


def choose_language(
    guesses: Sequence[LanguageGuess], policy: LanguagePolicy, text: str = ""
) -> str:
    """The language ``text``'s function words tell (``function_word_language``), else
    the best guess when confident enough, else the default language; the first two
    only when supported. The detector alone takes short English questions for other
    languages ("Who won the 2018 FIFA World Cup?": Vietnamese, 0.99)."""
    for known in (function_word_language(text), detected_language(guesses, policy)):
        if known is not None and (not policy.supported or known in policy.supported):
            return known
    return policy.default


#: Function words of the languages most of our owners write in: the grounded-refusal
#: rule leaves them out of a question's terms (``ragcore.chat.support``), and they
#: tell a short question's language where the detector guesses (``asked_in``).
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        """a about an and any are as at be been but by can could did do does for from had has
        have how i if in into is it its me my no not of on or our please so some than that
        the their them then there these they this to tell us was we were what when where
        which who whom why will with would you your""".split()
    ),
    "de": frozenset(
        """aber als am an auf aus bei bin bis das dass dem den der des die du ein eine einem
        einen einer eines es für hat habe haben ich ihr im in ist ja kann mein mit nach nicht
        noch oder sie sind so um und uns von vor was wer wie wir wird zu zum zur""".split()
    ),
    "fr": frozenset(
        """au aux avec ce ces dans de des du elle en est et il je la le les leur mais me mon
        ne nous on ou par pas pour qu que qui sa se ses son sur ta te tu un une vos votre
        vous""".split()
    ),
    "es": frozenset(
        """al como con cual cuál cuando cuándo de del el en es esta está este la las lo los
        me mi no para por que qué se su sus un una y yo""".split()
    ),
    "it": frozenset(
        """che come con cosa dei degli del della delle devo di gli il la le mia mio nel nella
        non per più posso quale quali questa questo sono una uno""".split()
    ),
    "pt": frozenset(
        """ao aos com como da das de do em está faço isso isto meu minha não numa para pela
        pelo por qual quais que seu sua são tem uma você""".split()  # not "os": English "OS"
    ),
    "nl": frozenset(
        """aan al bij dat de den der die dit een en het hoe ik in is je met mijn naar niet of
        om op te van voor wat we wie zijn""".split()
    ),
}
#: function words of three letters or more, of one language and no other, that tell a
#: text's language
MIN_FUNCTION_WORDS = 2
#: each language's function words that no other language of ``FUNCTION_WORDS`` has
_OWN_WORDS = {
    code: words.difference(*(other for c, other in FUNCTION_WORDS.items() if c != code))
    for code, words in FUNCTION_WORDS.items()
}


def function_word_language(text: str) -> str | None:
    """The language of ``FUNCTION_WORDS`` of which ``text`` holds at least
    ``MIN_FUNCTION_WORDS`` function words of three letters or more that are no other
    language's, when it holds none of another's; None otherwise. Shorter words and shared
    ones are left to the detector: "como" and "para" are Spanish and Portuguese, "que"
    French too, "wie" German and Dutch."""
    found = re.findall(r"\w{3,}", text.lower())
    counts = [(sum(w in words for w in found), code) for code, words in _OWN_WORDS.items()]
    told = [(count, code) for count, code in counts if count]
    if len(told) == 1 and told[0][0] >= MIN_FUNCTION_WORDS:
        return told[0][1]
    return None


def asked_in(text: str, guesses: Sequence[LanguageGuess], policy: LanguagePolicy) -> str | None:
    """The language a question is surely in, for rules measured in one language: its
    function words when they tell (the detector, over all languages, takes short English
    questions for others: "Who won the 2018 FIFA World Cup?" for Vietnamese at 0.99),
    else the detector's confident guess (``detected_language``); None when not known."""
    return function_word_language(text) or detected_language(guesses, policy)


def detected_language(guesses: Sequence[LanguageGuess], policy: LanguagePolicy) -> str | None:
    """The language the text is surely in (the best guess, when confident), whether or
    not answers may be given in it; None when not known."""
    for guess in guesses[:1]:
        if guess.confidence >= policy.threshold:
            return guess.code
    return None


# The names of the languages lingua knows, for the prompt ("Answer in German").
NAMES = {
    "af": "Afrikaans",
    "ar": "Arabic",
    "az": "Azerbaijani",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "bs": "Bosnian",
    "ca": "Catalan",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "eo": "Esperanto",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "ga": "Irish",
    "gu": "Gujarati",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "ko": "Korean",
    "la": "Latin",
    "lg": "Ganda",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mi": "Maori",
    "mk": "Macedonian",
    "mn": "Mongolian",
    "mr": "Marathi",
    "ms": "Malay",
    "nb": "Norwegian Bokmal",
    "nl": "Dutch",
    "nn": "Norwegian Nynorsk",
    "pa": "Punjabi",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovene",
    "sn": "Shona",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "st": "Sotho",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "th": "Thai",
    "tl": "Tagalog",
    "tn": "Tswana",
    "tr": "Turkish",
    "ts": "Tsonga",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "xh": "Xhosa",
    "yo": "Yoruba",
    "zh": "Chinese",
    "zu": "Zulu",
}


def language_name(code: str) -> str:
    return NAMES.get(code, code)


# What the service says when the documents hold no answer, in the languages
# most small businesses we serve write in; others get the English sentence.
NOT_FOUND = {
    "en": "The available documents do not answer this question.",
    "de": "Die vorhandenen Dokumente beantworten diese Frage nicht.",
    "fr": "Les documents disponibles ne répondent pas à cette question.",
    "es": "Los documentos disponibles no responden a esta pregunta.",
    "it": "I documenti disponibili non rispondono a questa domanda.",
    "nl": "De beschikbare documenten beantwoorden deze vraag niet.",
    "pt": "Os documentos disponíveis não respondem a esta pergunta.",
    "pl": "Dostępne dokumenty nie odpowiadają na to pytanie.",
}


def not_found(language: str) -> str:
    return NOT_FOUND.get(language, NOT_FOUND["en"])
