"""Greetings, thanks and goodbyes: a short friendly reply, not a search.

"hi" searched in the owner's documents finds nothing ("The available documents do not
answer this question.") or, worse, a sentence that shares a word; "thanks" after an
answer is no question at all. A message made only of such words (in the languages of
``ragcore.language.NOT_FOUND``) gets a short reply in its own language: no retrieval, no
citation, no model call, no token. A message with anything more ("Hi, can I pay by
card?", "thanks, and the shipping?") is a question and is answered as one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import attrs

from ragcore.language import LanguagePolicy

Kind = Literal["greeting", "thanks", "goodbye"]

#: the phrases of each kind, per language, as ``_words`` reads them (case and accents
#: aside)
PHRASES: dict[str, dict[Kind, tuple[str, ...]]] = {
    "en": {
        "greeting": (
            "hi",
            "hello",
            "hey",
            "hiya",
            "howdy",
            "greetings",
            "good morning",
            "good afternoon",
            "good evening",
            "good day",
            "how are you",
            "how are you doing",
        ),
        "thanks": (
            "thanks",
            "thank you",
            "thx",
            "ty",
            "cheers",
            "many thanks",
            "much appreciated",
            "appreciate it",
        ),
        "goodbye": (
            "bye",
            "goodbye",
            "good bye",
            "bye bye",
            "see you",
            "see you later",
            "have a nice day",
            "have a good day",
            "take care",
        ),
    },
    "de": {
        "greeting": (
            "hallo",
            "hi",
            "hey",
            "guten morgen",
            "guten tag",
            "guten abend",
            "moin",
            "servus",
            "gruss gott",
            "gruezi",
            "wie geht's",
            "wie gehts",
        ),
        "thanks": ("danke", "danke schon", "dankeschon", "vielen dank", "besten dank"),
        "goodbye": ("tschuss", "tschus", "auf wiedersehen", "bis bald", "schonen tag"),
    },
    "fr": {
        "greeting": ("bonjour", "bonsoir", "salut", "coucou", "ca va"),
        "thanks": ("merci", "merci beaucoup", "merci bien", "mille mercis"),
        "goodbye": ("au revoir", "bonne journee", "bonne soiree", "a bientot"),
    },
    "es": {
        "greeting": ("hola", "buenos dias", "buenas tardes", "buenas noches", "buenas", "que tal"),
        "thanks": ("gracias", "muchas gracias", "mil gracias"),
        "goodbye": ("adios", "hasta luego", "hasta pronto", "chao"),
    },
    "it": {
        "greeting": ("ciao", "salve", "buongiorno", "buonasera", "buon pomeriggio", "come stai"),
        "thanks": ("grazie", "grazie mille", "molte grazie"),
        "goodbye": ("arrivederci", "a presto", "buona giornata", "buona serata"),
    },
    "nl": {
        "greeting": ("hallo", "hoi", "hey", "goedemorgen", "goedemiddag", "goedenavond"),
        "thanks": ("dank je", "dank u", "dankjewel", "dank je wel", "dank u wel", "bedankt"),
        "goodbye": ("doei", "tot ziens", "fijne dag"),
    },
    "pt": {
        "greeting": ("ola", "oi", "bom dia", "boa tarde", "boa noite"),
        "thanks": ("obrigado", "obrigada", "muito obrigado", "muito obrigada", "valeu"),
        "goodbye": ("tchau", "adeus", "ate logo", "ate mais"),
    },
    "pl": {
        "greeting": ("czesc", "dzien dobry", "witam", "hej", "dobry wieczor"),
        "thanks": ("dziekuje", "dzieki", "dziekuje bardzo"),
        "goodbye": ("do widzenia", "na razie"),
    },
}

#: words that may come with them ("hi there", "thanks a lot", "ok, thank you so much")
#: and say nothing more; alone, they are no small talk ("ok" may answer a question)
FILLERS = frozenset(
    """there all everyone everybody again so very much a lot lots ok okay great perfect
    awesome super cool nice wonderful excellent really for your the help and oh ah
    beaucoup bien tout le monde vielen sehr nochmal muchas mucho todo tutti molto ja yes
    oui si sim tak""".split()
)

#: the most words a message of small talk has
MAX_WORDS = 8

#: the reply to each kind, per language
REPLIES: dict[str, dict[Kind, str]] = {
    "en": {
        "greeting": "Hello! How can I help you?",
        "thanks": "You're welcome! Is there anything else I can help with?",
        "goodbye": "Goodbye, and thank you for getting in touch!",
    },
    "de": {
        "greeting": "Hallo! Wie kann ich Ihnen helfen?",
        "thanks": "Gern geschehen! Kann ich sonst noch helfen?",
        "goodbye": "Auf Wiedersehen und danke für Ihre Nachricht!",
    },
    "fr": {
        "greeting": "Bonjour ! Comment puis-je vous aider ?",
        "thanks": "Avec plaisir ! Puis-je vous aider pour autre chose ?",
        "goodbye": "Au revoir, et merci de nous avoir écrit !",
    },
    "es": {
        "greeting": "¡Hola! ¿En qué puedo ayudarle?",
        "thanks": "¡De nada! ¿Puedo ayudarle en algo más?",
        "goodbye": "¡Adiós, y gracias por escribirnos!",
    },
    "it": {
        "greeting": "Buongiorno! Come posso aiutarla?",
        "thanks": "Prego! Posso aiutarla in qualcos'altro?",
        "goodbye": "Arrivederci, e grazie per averci scritto!",
    },
    "nl": {
        "greeting": "Hallo! Waarmee kan ik u helpen?",
        "thanks": "Graag gedaan! Kan ik u nog ergens mee helpen?",
        "goodbye": "Tot ziens, en bedankt voor uw bericht!",
    },
    "pt": {
        "greeting": "Olá! Como posso ajudar?",
        "thanks": "De nada! Posso ajudar em mais alguma coisa?",
        "goodbye": "Até logo, e obrigado pelo contacto!",
    },
    "pl": {
        "greeting": "Dzień dobry! W czym mogę pomóc?",
        "thanks": "Proszę bardzo! Czy mogę pomóc w czymś jeszcze?",
        "goodbye": "Do widzenia i dziękujemy za kontakt!",
    },
}


@attrs.frozen
class SmallTalk:
    kind: Kind
    language: str

    @property
    def reply(self) -> str:
        return REPLIES[self.language][self.kind]


def _words(text: str) -> list[str]:
    """Lower-case words without accents ("Grüß Gott!" -> ["gruss", "gott"])."""
    folded = unicodedata.normalize("NFKD", text.casefold().replace("ß", "ss").replace("’", "'"))
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", plain)


def _phrase_table() -> dict[tuple[str, ...], list[tuple[Kind, str]]]:
    table: dict[tuple[str, ...], list[tuple[Kind, str]]] = {}
    for language, kinds in PHRASES.items():
        for kind, phrases in kinds.items():
            for phrase in phrases:
                table.setdefault(tuple(phrase.split()), []).append((kind, language))
    return table


_TABLE = _phrase_table()
_LONGEST = max(len(words) for words in _TABLE)


def small_talk(text: str, policy: LanguagePolicy = LanguagePolicy()) -> SmallTalk | None:
    """The small talk ``text`` is, when it is nothing else; None for anything more.

    Its kind: thanks when it thanks ("hi, thanks!"), else a goodbye when it says one,
    else a greeting. Its language: one that all its phrases are in (the policy's default
    first, "hallo" is German and Dutch), else the last phrase's; within the policy's
    supported languages, else the default."""
    words = _words(text)
    if not words or len(words) > MAX_WORDS or re.search(r"\d", text):
        return None
    found: list[list[tuple[Kind, str]]] = []
    at = 0
    while at < len(words):
        for size in range(min(_LONGEST, len(words) - at), 0, -1):
            if (meanings := _TABLE.get(tuple(words[at : at + size]))) is not None:
                found.append(meanings)
                at += size
                break
        else:
            if words[at] not in FILLERS:
                return None
            at += 1
    if not found:
        return None
    kinds = {kind for meanings in found for kind, _ in meanings}
    kind: Kind = "thanks" if "thanks" in kinds else "goodbye" if "goodbye" in kinds else "greeting"
    common = set.intersection(*({language for _, language in m} for m in found))
    languages = common or {language for _, language in found[-1]}
    order = [policy.default, *PHRASES]
    language = next(code for code in order if code in languages)
    if policy.supported and language not in policy.supported:
        language = policy.default
    return SmallTalk(kind, language if language in REPLIES else "en")
