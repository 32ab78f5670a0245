"""The values a live-data action can need, found in a customer's message.

``order_id``, ``email`` and ``phone`` are read from the text; ``caller`` is who the
channel says is writing (``user_identifier``), never the text. Each value is taken as
plain data: it is later bound as a driver parameter, so a quote or a semicolon in it is
harmless, but the patterns below only take characters such a value really has, so
``4411' OR '1'='1`` gives the order number ``4411`` and ``{email}`` gives no e-mail.

An order number is only taken after a word for "order" in one of the languages we
answer in (``order #A-1002``, ``Bestellnummer 55321``, ``commande n° 7781``): a bare
number could as well be a price, a date, a quantity or a phone number, and running a
customer's query with the wrong one is worse than asking. When a message holds two
candidates of one kind, the first is taken: it is the one the customer wrote first.

A caller's speech-to-text may write digits as words ("order four four one one",
"Bestellung vier vier eins eins"): a run of at least ``MIN_SPOKEN_DIGITS`` digit words
in the languages we answer in is read as its digits first (``spoken_digits``), so the
rules above see "order 4411". Fewer are left as words: "one of my orders", "two or
three" stay prose, and a number read as words still needs the word for "order" (or the
question for it) to be an order number.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import attrs

#: the placeholders a template may use
ORDER_ID = "order_id"
EMAIL = "email"
PHONE = "phone"
CALLER = "caller"
PLACEHOLDERS = (ORDER_ID, EMAIL, PHONE, CALLER)

#: words for "order" (and "order number"), each with the language it tells (None: more
#: than one: "pedido" is Spanish and Portuguese)
ORDER_WORDS: dict[str, str | None] = {
    "bestellnummer": "de",
    "auftragsnummer": "de",
    "bestellnr": "de",
    "auftragsnr": "de",
    "bestellung": "de",
    "auftrag": "de",
    "bestelnummer": "nl",
    "ordernummer": "nl",
    "ordernr": "nl",
    "bestelling": "nl",
    "commande": "fr",
    "pedido": None,
    "encomenda": "pt",
    "ordinazione": "it",
    "ordine": "it",
    "orden": "es",
    "order": "en",
}
#: words that may stand between the word for "order" and its number
_LINKS = (
    r"(?:number|num|no\.?|nr\.?|n[°º]|n\.|#|id|is|was|ist|lautet|est|es|é|è|"
    r"nummer|numéro|numero|número|de|du|do|da|di|d'|del|mi|my|:|-|\()"
)
_ORDER = re.compile(
    r"(?<![\w])(?P<word>" + "|".join(sorted(ORDER_WORDS, key=len, reverse=True)) + r")"
    r"(?:s|en|es|i)?\b"  # plurals: orders, Bestellungen, pedidos, commandes
    r"(?:\s*" + _LINKS + r")*\s*"
    # the number: letters, digits and inner dashes, with at least one digit
    r"#?(?P<id>(?=[A-Za-z0-9-]*\d)[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9]))*)"
    # not a price (44.99, 44,99, 45€), a date (12/03), a quantity (100 pieces) or a
    # longer number's start
    r"(?![.,/]\d|\s?(?:€|\$|£|eur\b|usd\b|dollars?\b|euros?\b)|[\w@]"
    r"|\s*(?:x|pcs|pieces?|items?|units?|box(?:es)?|bottles?|packs?|st(?:ü|ue)ck|stk|"
    r"pi[eè]ces?|articles?|unidad(?:es)?|piezas?|pezzi|pezzo|stuks|pe[çc]as|kg|g|lbs?|ml|l)\b)",
    re.IGNORECASE,
)
#: a lone "#A-1002": an order number without a word for order
_HASH_ID = re.compile(r"(?<![\w&])#(?P<id>(?=[A-Za-z0-9-]*\d)[A-Za-z0-9][A-Za-z0-9-]{2,})\b")
MIN_ORDER_CHARS = 3  # "order 2 shirts" is a quantity
#: a number alone in a reply to the question for it, as in "4411" or "it's #A-1002"
_BARE_ID = re.compile(
    r"(?<![\w@.+-])#?(?P<id>(?=[A-Za-z0-9-]*\d)[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9]))*)"
    r"(?![\w@]|[.,/]\d|\s?(?:€|\$|£))"
)
MAX_REPLY_WORDS = 8  # a longer message is not a bare reply
MAX_ORDER_CHARS = 40

_EMAIL = re.compile(
    r"(?<![\w.+-])([A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
    r"[A-Za-z0-9])?)*\.[A-Za-z]{2,24})(?![\w@-])"
)
#: a phone number as people write it: + or 00, digits in groups split by spaces, dots,
#: dashes, slashes or parentheses
_PHONE = re.compile(r"(?<![\w+])(?:\+|\b00)?\(?\d[\d\s().\-/]{5,22}\d(?![\w])")
_PHONE_WORDS = re.compile(
    r"(?:phone|tel|telephone|mobile|cell|call|handy|telefon|telefonnummer|mobil|"
    r"téléphone|portable|teléfono|telefono|móvil|movil|cellulare|telefoon|mobiel|"
    r"telemóvel|celular|whatsapp)\w*",
    re.IGNORECASE,
)
MIN_PHONE_DIGITS = 7  # with a word for phone before it
MIN_BARE_PHONE_DIGITS = 9  # without one: longer than a date or a price
MAX_PHONE_DIGITS = 15  # E.164


#: the digit words of the languages we answer in; a word that is a digit in several
#: languages means the same digit in each ("vier": German and Dutch, "six": English and
#: French). Left out: articles that are not also numerals ("ein", "une"), and
#: "o" (Spanish, Italian and Portuguese "or")
SPOKEN_DIGITS: dict[str, str] = {
    # English
    "zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
    # German
    "null": "0", "eins": "1", "zwei": "2", "zwo": "2", "drei": "3", "vier": "4",
    "fünf": "5", "fuenf": "5", "sechs": "6", "sieben": "7", "acht": "8", "neun": "9",
    # French
    "zéro": "0", "un": "1", "deux": "2", "trois": "3", "quatre": "4", "cinq": "5",
    "sept": "7", "huit": "8", "neuf": "9",
    # Spanish
    "cero": "0", "uno": "1", "dos": "2", "tres": "3", "cuatro": "4", "cinco": "5",
    "seis": "6", "siete": "7", "ocho": "8", "nueve": "9",
    # Italian
    "due": "2", "tre": "3", "quattro": "4", "cinque": "5", "sei": "6", "sette": "7",
    "otto": "8", "nove": "9",
    # Dutch
    "nul": "0", "een": "1", "één": "1", "twee": "2", "drie": "3", "vijf": "5",
    "zes": "6", "zeven": "7", "negen": "9",
    # Portuguese
    "um": "1", "uma": "1", "dois": "2", "duas": "2", "três": "3", "sete": "7", "oito": "8",
}  # fmt: skip
#: "double four" is 44, as English callers read numbers out
_REPEATS = {"double": 2, "triple": 3}
#: fewer digit words in a row stay words: "one of my orders", "two or three days"
MIN_SPOKEN_DIGITS = 3
_DIGIT = "(?:" + "|".join(sorted(SPOKEN_DIGITS, key=len, reverse=True)) + ")"
_SPOKEN = r"(?:(?:double|triple)\s+)?" + _DIGIT + r"(?![\w@])"
_SPOKEN_RUN = re.compile(
    # a run does not begin with an interjection ("Oh, four four one one"; "um, …")
    r"(?<![\w@])(?!(?:oh|um)\s*[,.!?])" + _SPOKEN + r"(?:(?:\s*[,-]\s*|\s+)" + _SPOKEN + r")*",
    re.IGNORECASE,
)
_SPOKEN_TOKEN = re.compile(r"(?:(?P<repeat>double|triple)\s+)?(?P<digit>" + _DIGIT + ")", re.I)


def spoken_digits(text: str) -> str:
    """``text`` with each run of at least ``MIN_SPOKEN_DIGITS`` spoken digits written as
    the digits: "order four four one one" is "order 4411", "double four one one" 4411."""

    def digits(run: re.Match[str]) -> str:
        said = "".join(
            SPOKEN_DIGITS[token.group("digit").lower()]
            * _REPEATS.get((token.group("repeat") or "").lower(), 1)
            for token in _SPOKEN_TOKEN.finditer(run.group(0))
        )
        return said if len(said) >= MIN_SPOKEN_DIGITS else run.group(0)

    return _SPOKEN_RUN.sub(digits, text)


@attrs.frozen
class Extracted:
    """What the message holds: each value, or None. ``order_language``: the language of
    the word for "order" the customer used, a cheap hint for the question we may ask."""

    order_id: str | None = None
    email: str | None = None
    phone: str | None = None
    order_language: str | None = None

    def values(self, caller: str | None = None) -> dict[str, str]:
        """The placeholders' values found (``caller`` added when known)."""
        found = {ORDER_ID: self.order_id, EMAIL: self.email, PHONE: self.phone, CALLER: caller}
        return {name: value for name, value in found.items() if value}


def extract(message: str, expecting: Collection[str] = ()) -> Extracted:
    """``order_id``, ``email`` and ``phone`` from ``message`` (see the module's notes).

    ``expecting``: the values the customer was just asked for. Their reply may then be
    the bare value ("4411", "it's A-1002", "0171 1234567"): a short message's lone
    number is taken as the order number, and a shorter run of digits as the phone.
    Digits said as words count as digits (``spoken_digits``)."""
    message = spoken_digits(message)
    emails = [(m.start(), m.end(), m.group(1).lower()) for m in _EMAIL.finditer(message)]
    taken = [(start, end) for start, end, _ in emails]
    order = _order(message, taken)
    if order is not None:
        taken.append((order[0], order[1]))
    phone = _phone(message, taken, asked=PHONE in expecting)
    if phone is not None:
        taken.append((phone[0], phone[1]))
    if order is None and ORDER_ID in expecting:
        order = _bare_order(message, taken)
    return Extracted(
        order_id=order[2] if order else None,
        email=emails[0][2] if emails else None,
        phone=phone[2] if phone else None,
        order_language=order[3] if order else None,
    )


def caller_value(channel: str, user_identifier: str | None) -> str | None:
    """``{caller}``: who the channel says is writing. On WhatsApp and the voice channel
    that is a phone number, given as ``whatsapp:+…``, ``tel:+…`` or bare digits: it is
    made E.164, as the owner's records hold it (``+14155550100``); on other channels
    (a Telegram or Discord user id, the widget visitor's verified user id on ``web``) it
    is the identifier as given."""
    if user_identifier is None or not user_identifier.strip():
        return None
    text = user_identifier.strip()
    if channel in ("whatsapp", "voice"):
        number = text.removeprefix("whatsapp:").removeprefix("tel:").strip()
        number = number if number.startswith(("+", "00")) else "+" + number
        return normal_phone(number) or text
    return text


def normal_phone(text: str) -> str | None:
    """A phone number as E.164 (``+14155550100``) when it starts with + or 00, which
    tell its country; else its digits alone (a national number: the country is not
    ours to guess). A trunk ``(0)`` after the country code is dropped. None when it has
    too few or too many digits to be a phone number."""
    text = text.strip()
    international = text.startswith("+") or text.startswith("00")
    if international:
        text = re.sub(r"^(\+|00)\s*(\d{1,3})\s*\(0\)", r"+\2", text)
    digits = re.sub(r"\D", "", text)
    if text.startswith("00"):
        digits = digits[2:]
    if not MIN_PHONE_DIGITS <= len(digits) <= MAX_PHONE_DIGITS:
        return None
    if international:
        return digits if digits.startswith("+") else "+" + digits
    return digits


def _order(message: str, taken: list[tuple[int, int]]) -> tuple[int, int, str, str | None] | None:
    for match in _ORDER.finditer(message):
        value = match.group("id")
        if not MIN_ORDER_CHARS <= len(value) <= MAX_ORDER_CHARS or _DATE.fullmatch(value):
            continue
        if _inside(match.start("id"), match.end("id"), taken):
            continue
        word = match.group("word").lower()
        return match.start("id"), match.end("id"), value, ORDER_WORDS[word]
    for match in _HASH_ID.finditer(message):
        if not _inside(match.start(), match.end(), taken):
            return match.start("id"), match.end("id"), match.group("id"), "en"
    return None


def _phone(
    message: str, taken: list[tuple[int, int]], *, asked: bool = False
) -> tuple[int, int, str] | None:
    for match in _PHONE.finditer(message):
        text = match.group(0)
        if _inside(match.start(), match.end(), taken) or _looks_like_date(text):
            continue
        normal = normal_phone(text)
        if normal is None:
            continue
        before = message[max(0, match.start() - 40) : match.start()]
        named = asked or _PHONE_WORDS.search(before) is not None
        international = text.startswith(("+", "00"))
        digits = len(normal.lstrip("+"))
        if named or international or digits >= MIN_BARE_PHONE_DIGITS:
            return match.start(), match.end(), normal
    return None


def _bare_order(message: str, taken: list[tuple[int, int]]) -> tuple[int, int, str, None] | None:
    """A lone order number in a short reply to "What is your order number?"."""
    if len(message.split()) > MAX_REPLY_WORDS:
        return None
    for match in _BARE_ID.finditer(message):
        value = match.group("id")
        if len(value) < MIN_ORDER_CHARS or len(value) > MAX_ORDER_CHARS or _DATE.fullmatch(value):
            continue
        if not _inside(match.start(), match.end(), taken):
            return match.start("id"), match.end("id"), value, None
    return None


_DATE = re.compile(r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4}")


def _looks_like_date(text: str) -> bool:
    """A date, or a date and time (``2024-03-12 10:30`` would read as ten digits)."""
    return re.match(_DATE.pattern + r"(?!\d)", text.strip()) is not None


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < other_end and other_start < end for other_start, other_end in spans)
