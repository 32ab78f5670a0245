"""Which of the owner's live-data actions a customer's message calls for.

A trigger phrase is the owner saying exactly when an action runs, so any action whose
phrase the message holds wins over every guess (the longest phrase first: "cancel my
order" is more precise than "order"). Otherwise actions that allow it are auto-matched:
the words of the column and field names their template mentions against the message's
words, plus the kinds of value the message holds ("4411" after "Bestellung" says
"order" in any language); with no value to run on, one word in common is not enough
(``MIN_HITS_UNFILLED``). A write (UPDATE, INSERT, DELETE) is never guessed: it runs
only on its trigger phrase, as a customer's "cancel" must be said, not inferred. An
action whose placeholders the message fills beats one it does not, since it can run
now; ties go to the lower action id, so the same message always runs the same action.

When the action needs a value the message lacks, nothing runs: the customer is asked
for it in plain words, in the message's language when a few common words tell it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

import attrs

from ragcore.live.extraction import CALLER, EMAIL, ORDER_ID, PHONE
from ragcore.live.templates import Template


@attrs.frozen
class LiveAction:
    """An action the owner configured: its template on one data source."""

    id: int
    name: str
    source_id: int
    kind: str  # the source's source_type
    template: Template
    triggers: tuple[str, ...] = ()
    auto_match: bool = True
    channels: tuple[str, ...] = ()  # empty: every channel
    description: str = ""  # what the data is, for the answer (the owner's words)


@attrs.frozen
class Matched:
    """``action`` matched; ``by``: ``trigger``, ``auto`` or ``reply`` (to the question
    for a missing value: see ``Pending``); ``missing``: the placeholders
    the values lack (nothing runs until the customer gives them)."""

    action: LiveAction
    by: str
    missing: tuple[str, ...] = ()


#: the words a kind of value found in a message stands for, in auto-matching
_VALUE_WORDS = {
    ORDER_ID: ("order", "orders"),
    EMAIL: ("email", "mail"),
    PHONE: ("phone", "telephone", "mobile"),
}
#: a few words of other languages that name what a table or field is about
_SYNONYMS = {
    "order": (
        "bestellung",
        "auftrag",
        "commande",
        "pedido",
        "ordine",
        "bestelling",
        "encomenda",
    ),
    "status": ("stand", "statut", "estado", "stato", "estado", "situacao"),
    "tracking": ("sendungsverfolgung", "suivi", "seguimiento", "tracciamento", "rastreio"),
    "delivery": ("lieferung", "livraison", "entrega", "consegna", "levering"),
    "shipping": ("versand", "expedition", "envio", "spedizione", "verzending"),
    "invoice": ("rechnung", "facture", "factura", "fattura", "factuur", "fatura"),
    "refund": ("erstattung", "remboursement", "reembolso", "rimborso", "terugbetaling"),
    "customer": ("kunde", "client", "cliente", "klant"),
    "balance": ("guthaben", "solde", "saldo"),
}
#: an action the message gives no value for needs this many of its words in the message:
#: "what is your return policy for orders?" is a question for the knowledge base, not
#: for "What is your order number?"; "what's the status of my order?" is one for it
MIN_HITS_UNFILLED = 2
_TO_ENGLISH = {word: english for english, words in _SYNONYMS.items() for word in words}


def normal_words(text: str) -> str:
    """``text`` lower-case, accents removed, every run of non-letters one space, with a
    space at each end: phrases then match on word boundaries by ``in``."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(char for char in folded if not unicodedata.combining(char))
    return " " + " ".join(re.findall(r"[^\W_]+", plain)) + " "


def match_action(
    actions: Iterable[LiveAction],
    message: str,
    values: Mapping[str, str],
    channel: str,
) -> Matched | None:
    """The action ``message`` (on ``channel``, holding ``values``) calls for, or None."""
    usable = [a for a in actions if not a.channels or channel in a.channels]
    text = normal_words(message)
    triggered = [
        (len(normal_words(phrase)), action)
        for action in usable
        for phrase in action.triggers
        if normal_words(phrase).strip() and normal_words(phrase) in text
    ]
    if triggered:
        _, action = min(triggered, key=lambda pair: (-pair[0], pair[1].id))
        return Matched(action, "trigger", _missing(action, values))
    words = _message_words(text, values)
    scored = []
    for action in usable:
        if not action.auto_match or action.template.writes:
            continue
        hits = sum(1 for word in action.template.words if _stem(word) in words)
        missing = _missing(action, values)
        filled = len(action.template.params) - len(missing)
        if hits == 0 or (filled == 0 and hits < MIN_HITS_UNFILLED):
            continue
        scored.append(((not missing, filled, hits, -action.id), action, missing))
    if not scored:
        return None
    _, action, missing = max(scored, key=lambda item: item[0])
    return Matched(action, "auto", missing)


@attrs.frozen
class Pending:
    """A question asked in the last turn: for ``action_id``, the ``missing`` values, with
    the ``values`` already known. The caller keeps it with the conversation for the next
    message only, so the reply "4411" continues what the customer began."""

    action_id: int
    missing: tuple[str, ...]
    values: tuple[tuple[str, str], ...] = ()


def resume(
    actions: Iterable[LiveAction],
    pending: Pending,
    values: Mapping[str, str],
    channel: str,
) -> tuple[Matched, dict[str, str]] | None:
    """The pending action again, with the values known before and those of the reply,
    when the reply gives at least one value asked for; None otherwise (the message is
    about something else, and is matched afresh)."""
    if not any(values.get(name) for name in pending.missing):
        return None
    for action in actions:
        if action.id == pending.action_id and (not action.channels or channel in action.channels):
            known = {**dict(pending.values), **values}
            return Matched(action, "reply", _missing(action, known)), known
    return None


def _missing(action: LiveAction, values: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(name for name in action.template.params if not values.get(name))


def _message_words(text: str, values: Mapping[str, str]) -> set[str]:
    words = {_stem(word) for word in text.split()}
    words |= {_stem(_TO_ENGLISH[word]) for word in text.split() if word in _TO_ENGLISH}
    for name, names in _VALUE_WORDS.items():
        if values.get(name):
            words |= {_stem(word) for word in names}
    return words


def _stem(word: str) -> str:
    """Plural and singular alike: ``orders`` and ``order``, ``statuses`` and ``status``."""
    word = word.lower()
    if word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


# --- asking for a missing value -------------------------------------------------------

#: the question for each value, and for several ("…: {names}"), by language
QUESTIONS: dict[str, dict[str, str]] = {
    "en": {
        ORDER_ID: "What is your order number?",
        EMAIL: "What is the e-mail address on your order?",
        PHONE: "What is your phone number?",
        CALLER: "Which e-mail address or phone number is your account under?",
        "several": "To look that up, please tell me your {names}.",
    },
    "de": {
        ORDER_ID: "Wie lautet Ihre Bestellnummer?",
        EMAIL: "Wie lautet die E-Mail-Adresse Ihrer Bestellung?",
        PHONE: "Wie lautet Ihre Telefonnummer?",
        CALLER: "Unter welcher E-Mail-Adresse oder Telefonnummer ist Ihr Konto?",
        "several": "Um das nachzusehen, nennen Sie mir bitte: {names}.",
    },
    "fr": {
        ORDER_ID: "Quel est votre numéro de commande ?",
        EMAIL: "Quelle est l'adresse e-mail de votre commande ?",
        PHONE: "Quel est votre numéro de téléphone ?",
        CALLER: "Sous quelle adresse e-mail ou quel numéro de téléphone est votre compte ?",
        "several": "Pour le vérifier, merci de m'indiquer : {names}.",
    },
    "es": {
        ORDER_ID: "¿Cuál es su número de pedido?",
        EMAIL: "¿Cuál es el correo electrónico de su pedido?",
        PHONE: "¿Cuál es su número de teléfono?",
        CALLER: "¿Con qué correo electrónico o número de teléfono está su cuenta?",
        "several": "Para consultarlo, indíqueme por favor: {names}.",
    },
    "it": {
        ORDER_ID: "Qual è il suo numero d'ordine?",
        EMAIL: "Qual è l'indirizzo e-mail del suo ordine?",
        PHONE: "Qual è il suo numero di telefono?",
        CALLER: "Con quale indirizzo e-mail o numero di telefono è registrato il suo account?",
        "several": "Per verificarlo, mi indichi per favore: {names}.",
    },
    "nl": {
        ORDER_ID: "Wat is uw bestelnummer?",
        EMAIL: "Wat is het e-mailadres van uw bestelling?",
        PHONE: "Wat is uw telefoonnummer?",
        CALLER: "Onder welk e-mailadres of telefoonnummer staat uw account?",
        "several": "Om dat op te zoeken, geef me alstublieft: {names}.",
    },
    "pt": {
        ORDER_ID: "Qual é o número da sua encomenda?",
        EMAIL: "Qual é o e-mail da sua encomenda?",
        PHONE: "Qual é o seu número de telefone?",
        CALLER: "Com que e-mail ou número de telefone está a sua conta?",
        "several": "Para verificar, indique-me por favor: {names}.",
    },
}
#: the value's plain name, for the question about several
VALUE_NAMES: dict[str, dict[str, str]] = {
    "en": {
        ORDER_ID: "order number",
        EMAIL: "e-mail address",
        PHONE: "phone number",
        CALLER: "account's e-mail address or phone number",
    },
    "de": {
        ORDER_ID: "Bestellnummer",
        EMAIL: "E-Mail-Adresse",
        PHONE: "Telefonnummer",
        CALLER: "E-Mail-Adresse oder Telefonnummer Ihres Kontos",
    },
    "fr": {
        ORDER_ID: "numéro de commande",
        EMAIL: "adresse e-mail",
        PHONE: "numéro de téléphone",
        CALLER: "adresse e-mail ou numéro de téléphone du compte",
    },
    "es": {
        ORDER_ID: "número de pedido",
        EMAIL: "correo electrónico",
        PHONE: "número de teléfono",
        CALLER: "correo electrónico o teléfono de su cuenta",
    },
    "it": {
        ORDER_ID: "numero d'ordine",
        EMAIL: "indirizzo e-mail",
        PHONE: "numero di telefono",
        CALLER: "e-mail o telefono del suo account",
    },
    "nl": {
        ORDER_ID: "bestelnummer",
        EMAIL: "e-mailadres",
        PHONE: "telefoonnummer",
        CALLER: "e-mailadres of telefoonnummer van uw account",
    },
    "pt": {
        ORDER_ID: "número da encomenda",
        EMAIL: "e-mail",
        PHONE: "número de telefone",
        CALLER: "e-mail ou telefone da sua conta",
    },
}
_AND = {"en": "and", "de": "und", "fr": "et", "es": "y", "it": "e", "nl": "en", "pt": "e"}

#: common words that tell a language in a short message (accents removed)
_MARKERS: dict[str, frozenset[str]] = {
    "en": frozenset("the is my where what when your with have has order please thanks".split()),
    "de": frozenset(
        "ist mein meine wo wann ich nicht und bitte danke bestellung der die das".split()
    ),
    "fr": frozenset("est ma mon ou quand je pas et merci commande le la les vous".split()),
    "es": frozenset("es mi donde cuando esta gracias pedido el los por favor".split()),
    "it": frozenset("il mio mia dove quando grazie ordine non sono per".split()),
    "nl": frozenset("is mijn waar wanneer ik niet en bedankt bestelling het de".split()),
    "pt": frozenset(
        "meu minha onde quando obrigado obrigada encomenda pedido nao esta o os".split()
    ),
}


def guess_language(message: str, hint: str | None = None) -> str:
    """The language to ask in: ``hint`` (a word for "order" the customer used, or a
    detector's answer) when we have its questions, else the language most of the
    message's common words belong to, else English."""
    if hint in QUESTIONS:
        return hint
    words = normal_words(message).split()
    counts = {code: sum(word in markers for word in words) for code, markers in _MARKERS.items()}
    best = max(counts, key=lambda code: (counts[code], code == "en"))
    return best if counts[best] > 0 else "en"


def question_for(missing: Sequence[str], language: str = "en") -> str:
    """A short question for the missing values, in ``language`` (English when unknown)."""
    questions = QUESTIONS.get(language, QUESTIONS["en"])
    names = VALUE_NAMES.get(language, VALUE_NAMES["en"])
    if len(missing) == 1:
        return questions[missing[0]]
    listed = [names[name] for name in missing]
    joined = ", ".join(listed[:-1]) + f" {_AND.get(language, 'and')} " + listed[-1]
    return questions["several"].format(names=joined)
