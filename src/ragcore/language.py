"""Which language to answer in (behaviour rule 8).

The detector (lingua, in ragio) proposes languages with confidences; this rule
decides. Very short messages ("ok", "hi") say too little to detect, and a
guess under the confidence threshold is no better: both fall back to
DEFAULT_LANGUAGE.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from ragcore.effects import Effect

if TYPE_CHECKING:
    from ragcore.settings import Settings

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

    text: str


@attrs.frozen
class LanguagePolicy:
    default: str = "en"
    threshold: float = 0.7
    supported: tuple[str, ...] = ()  # empty: any language

    @classmethod
    def from_settings(cls, settings: Settings) -> LanguagePolicy:
        return cls(
            default=settings.default_language,
            threshold=settings.language_detection_confidence_threshold,
            supported=settings.language_detection_supported_languages,
        )


def worth_detecting(text: str) -> bool:
    return sum(ch.isalpha() for ch in text) >= MIN_LETTERS


def choose_language(guesses: Sequence[LanguageGuess], policy: LanguagePolicy) -> str:
    """The best guess when confident enough (and supported), else the default language."""
    for guess in guesses[:1]:
        allowed = not policy.supported or guess.code in policy.supported
        if allowed and guess.confidence >= policy.threshold:
            return guess.code
    return policy.default


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
