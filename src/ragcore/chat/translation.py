"""Questions in another language than the documents', offline: each of the question's
words looked up in a bilingual dictionary, FreeDict's as Debian ships them
(``dict-freedict-deu-eng`` and the others of ``DICTIONARIES``, in ``/usr/share/dictd``).

The translations are no sentence, and need not be: they feed what works on words, the
full-text side of the search (``search_text``) and the offline answerer's and the
grounded refusal's reading of the sources (``question_terms``): "Wie sperre ich eine
einzelne Adresse?" finds and quotes "To block a single address, …" through "sperre" →
"block", "einzelne" → "single" and "Adresse" → "address". A word no dictionary knows
(a name, a command, "htpasswd") stays as it is. A configured model reads the question
itself and answers in its language.

The dictionaries' entries are read here (``entry_headword``, ``entry_translations``);
ragio stores them and looks the words up, each by its stem in the question's language
(``TranslateWords``), so that "sperre" finds "sperren".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import attrs

from ragcore.chat.support import words
from ragcore.effects import Effect

#: The question languages a dictionary translates into English, by ISO 639-1 code:
#: FreeDict's three-letter code for it (its files ``freedict-LLL-eng.index`` and
#: ``.dict.dz``) and PostgreSQL's stemmer for it.
DICTIONARIES: Mapping[str, tuple[str, str]] = {
    "de": ("deu", "german_stem"),
    "fr": ("fra", "french_stem"),
    "es": ("spa", "spanish_stem"),
    "it": ("ita", "italian_stem"),
    "nl": ("nld", "dutch_stem"),
    "pt": ("por", "portuguese_stem"),
}
#: The translations kept of one entry: its first, the usual sense comes first.
ENTRY_TRANSLATIONS = 3
#: The translations kept of one of the question's words, from all its entries, and
#: whether the dense side searches with the question and its translations rather than
#: the question alone (a second embedding, for these questions only). Chosen
#: leave-one-corpus-out on the non-English questions of the three sets of eval/
#: (``scripts/eval_loco.py --grid translation``): 2 and yes were best over all three,
#: none best held out on all three; no translation was worst on two (eval/answers/README.md).
WORD_TRANSLATIONS = 2
EMBED_TRANSLATIONS = True

#: The languages that write compounds as one word: a word no dictionary knows is read
#: as its parts ("configuratiebestanden": "configuratie" + "bestanden", "file").
COMPOUNDING = frozenset({"de", "nl"})
#: The shortest part of a compound looked up.
MIN_PART = 4
#: What joins the parts of a compound ("Arbeit-s-speicher", "boek-en-kast").
LINKS = ("s", "es", "en", "n", "e")

# "1. damage", "[sport] obstruction <n> [Br.]", "utilise sth. <v>"
_SENSE_NUMBER = re.compile(r"^\d+\.\s*")
_LABELS = re.compile(r"\[[^\]]*\]|<[^>]*>|\([^)]*\)|\{[^}]*\}|/[^/]*/")
_PLACEHOLDERS = re.compile(r"\b(?:sth|sb|so|etw|jdm|jdn|jds|jd)\.(?=\W|$)", re.IGNORECASE)
#: A translation of more words than this describes rather than translates ("central
#: venous catheter" for "Port"): left out.
MAX_TRANSLATION_WORDS = 3
# the lines after the translations: synonyms, notes, examples, cross-references
_NOT_TRANSLATIONS = ("synonym", "antonym", "note:", "see:", '"', "example")


@attrs.frozen
class TranslateWords(Effect[dict[str, tuple[str, ...]]]):
    """The English translations of ``words`` (content words of a question in
    ``language``, one of ``DICTIONARIES``), each found by its stem. Result: for each word
    a dictionary knows, its translations, best first (``WORD_TRANSLATIONS`` at most);
    a word it does not know is left out."""

    runs_ahead = True

    language: str
    words: tuple[str, ...]


def entry_headword(entry: str) -> str | None:
    """The word a dictionary entry translates, lower-cased; None for a phrase
    ("mit jdm. in Konflikt geraten"): a question's words are looked up one by one."""
    first = entry.split("\n", 1)[0]
    headword = first.split(" /", 1)[0].split(" <", 1)[0].strip()
    if not headword or any(ch.isspace() for ch in headword):
        return None
    return headword.lower()


def entry_translations(entry: str) -> tuple[str, ...]:
    """The English translations an entry gives, its first senses first
    (``ENTRY_TRANSLATIONS`` at most), without labels ("<n>", "[Br.]") or placeholders
    ("sth.")."""
    found: list[str] = []
    for line in entry.split("\n")[1:]:
        line = line.strip()
        if not line:
            continue
        if line.lower().startswith(_NOT_TRANSLATIONS):
            break
        line = _PLACEHOLDERS.sub(" ", _LABELS.sub(" ", _SENSE_NUMBER.sub("", line)))
        for part in re.split(r"[,;]", line):
            part = " ".join(part.split())
            if part and part not in found and len(part.split()) <= MAX_TRANSLATION_WORDS:
                found.append(part)
        if len(found) >= ENTRY_TRANSLATIONS:
            break
    return tuple(found[:ENTRY_TRANSLATIONS])


def question_terms(
    question: str, translations: Mapping[str, Sequence[str]]
) -> tuple[frozenset[str], ...]:
    """The question's content words, each with its translations' content words: a
    sentence that holds any of them holds that word of the question."""
    return tuple(
        frozenset({word, *(w for t in _translations(word, translations) for w in words(t))})
        for word in dict.fromkeys(words(question))
    )


def search_text(question: str, translations: Mapping[str, Sequence[str]]) -> str:
    """What the full-text side searches for: the question, then its words' translations."""
    english = [t for w in dict.fromkeys(words(question)) for t in _translations(w, translations)]
    return " ".join((question, *english))


def _translations(word: str, translations: Mapping[str, Sequence[str]]) -> Sequence[str]:
    """The translations of ``word``; none when it is one of them: it is English already
    ("server", "port", "Apache": not "hood, ruffian")."""
    found = translations.get(word, ())
    return () if any(t.lower() == word for t in found) else found


def compound_parts(word: str) -> tuple[str, ...]:
    """Every run of ``MIN_PART`` letters or more of ``word``: what may be one of its parts."""
    return tuple(
        dict.fromkeys(
            word[start:end]
            for start in range(len(word))
            for end in range(start + MIN_PART, len(word) + 1)
            if (start, end) != (0, len(word))
        )
    )


def compound_translations(word: str, known: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The translations of each part of the compound ``word``, read from its end:
    the longest known last part, then the same for what is before it (without a
    linking "s" or "en" when that makes it a word); none when its last part is unknown.
    ``known``: the translations of its parts (``compound_parts``) a dictionary knows."""
    parts: list[str] = []
    rest = word
    while len(rest) >= MIN_PART:
        whole = next((w for w in (rest, *_unlinked(rest)) if w in known), None)
        if whole is not None:
            parts.append(whole)
            break
        start = next((s for s in range(1, len(rest) - MIN_PART + 1) if rest[s:] in known), None)
        if start is None:
            break
        parts.append(rest[start:])
        rest = rest[:start]
    return tuple(t for part in reversed(parts) for t in known[part])


def _unlinked(head: str) -> tuple[str, ...]:
    return tuple(head[: -len(link)] for link in LINKS if head.endswith(link))
