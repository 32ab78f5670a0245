"""What a handoff says: to the customer, in their language (one of the seven the service
speaks, English otherwise), and to the owner, in English with the last turns and the
console's link."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from ragcore.employees.hours import is_open, parse_hours

#: "A person from <business> will reply here", per language; {who} is the business
_PERSON_WILL_REPLY = {
    "en": "A person from {who} will reply here.",
    "de": "Eine Person von {who} antwortet Ihnen hier.",
    "fr": "Une personne de {who} vous répondra ici.",
    "es": "Una persona de {who} le responderá aquí.",
    "it": "Una persona di {who} le risponderà qui.",
    "nl": "Iemand van {who} antwoordt u hier.",
    "pt": "Uma pessoa de {who} vai responder aqui.",
}
_OUR_TEAM = {
    "en": "our team",
    "de": "unserem Team",
    "fr": "notre équipe",
    "es": "nuestro equipo",
    "it": "nostro team",
    "nl": "ons team",
    "pt": "nossa equipe",
}
#: outside the opening hours: when they are, in the owner's own words
_CLOSED_NOW = {
    "en": "We are closed right now; our opening hours: {hours}.",
    "de": "Wir haben gerade geschlossen; unsere Öffnungszeiten: {hours}.",
    "fr": "Nous sommes fermés en ce moment ; nos horaires : {hours}.",
    "es": "Ahora mismo estamos cerrados; nuestro horario: {hours}.",
    "it": "Al momento siamo chiusi; i nostri orari: {hours}.",
    "nl": "We zijn nu gesloten; onze openingstijden: {hours}.",
    "pt": "Estamos fechados agora; nosso horário: {hours}.",
}
#: on the phone, put through to VOICE_TRANSFER_NUMBER
_PUT_THROUGH = {
    "en": "I'll put you through to a person from {who} now.",
    "de": "Ich verbinde Sie jetzt mit einer Person von {who}.",
    "fr": "Je vous mets en relation avec une personne de {who}.",
    "es": "Le paso ahora con una persona de {who}.",
    "it": "La metto subito in contatto con una persona di {who}.",
    "nl": "Ik verbind u nu door met iemand van {who}.",
    "pt": "Vou transferir você agora para uma pessoa de {who}.",
}
#: on the phone with nobody to put through to: a message for the inbox
_LEAVE_MESSAGE = {
    "en": "Nobody from {who} can come to the phone right now. Please leave your message "
    "after this, and they will get back to you.",
    "de": "Gerade kann niemand von {who} ans Telefon kommen. Bitte hinterlassen Sie jetzt "
    "Ihre Nachricht, man meldet sich bei Ihnen.",
    "fr": "Personne de {who} ne peut répondre pour le moment. Laissez votre message après "
    "ceci, on vous recontactera.",
    "es": "Ahora nadie de {who} puede atender el teléfono. Deje su mensaje a continuación "
    "y le devolverán la llamada.",
    "it": "Al momento nessuno di {who} può rispondere. Lasci il suo messaggio dopo questo "
    "avviso e la ricontatteranno.",
    "nl": "Er kan nu niemand van {who} aan de telefoon komen. Spreek na dit bericht uw "
    "boodschap in, dan nemen ze contact met u op.",
    "pt": "Ninguém de {who} pode atender agora. Deixe sua mensagem depois deste aviso e "
    "entrarão em contato.",
}


@attrs.frozen
class Business:
    """What the customer is told about the business: its ``name`` ('' unknown), its
    ``opening_hours`` as the owner wrote them, and the wall time in its time zone now
    (None when the profile names no valid time zone: the hours are then not judged)."""

    name: str = ""
    opening_hours: str = ""
    local_now: datetime | None = None


def _in(table: dict[str, str], language: str | None) -> str:
    return table.get((language or "en").split("-")[0].lower(), table["en"])


def handoff_notice(
    language: str | None, business: Business, *, phone: bool = False, transfer: bool = False
) -> str:
    """What the customer is told when a person takes over, in ``language``: a person will
    reply here, and when the business is open if it is closed now; on the phone, that
    the call is put through (``transfer``) or that they may leave a message."""
    who = business.name.strip() or _in(_OUR_TEAM, language)
    if phone:
        return _in(_PUT_THROUGH if transfer else _LEAVE_MESSAGE, language).format(who=who)
    said = _in(_PERSON_WILL_REPLY, language).format(who=who)
    if business.local_now is not None and business.opening_hours.strip():
        try:
            hours = parse_hours(business.opening_hours)
        except ValueError:  # stored before it was checked: not judged
            return said
        if hours.known and not is_open(hours, business.local_now):
            said += " " + _in(_CLOSED_NOW, language).format(hours=hours.text)
    return said


@attrs.frozen
class Exchange:
    """A message of the conversation as the owner's notification shows it."""

    author: str  # customer, ai, person
    text: str


MAX_NOTIFIED_CHARS = 300  # of each message in a notification


def owner_notification(
    conversation_id: int, channel: str, why: str, last: Sequence[Exchange], link: str
) -> str:
    """The owner's message when a conversation is handed to them: where, why, the last
    messages, and where to answer (``link``: the console's inbox; '' when
    PUBLIC_BASE_URL is not set)."""
    lines = [f"A customer on {channel} needs a person ({why}). Conversation {conversation_id}:"]
    for exchange in last:
        text = " ".join(exchange.text.split())
        if len(text) > MAX_NOTIFIED_CHARS:
            text = text[: MAX_NOTIFIED_CHARS - 1] + "…"
        lines.append(f"{_WHO[exchange.author]}: {text}")
    lines.append(_answer_where(link))
    return "\n".join(lines)


def forwarded_message(conversation_id: int, channel: str, text: str, link: str) -> str:
    """A customer's new message while a person answers, passed on to the owner."""
    return (
        f"Customer on {channel} (conversation {conversation_id}): {' '.join(text.split())}\n"
        + _answer_where(link)
    )


_WHO = {"customer": "Customer", "ai": "AI", "person": "You"}


def _answer_where(link: str) -> str:
    where = f"answer in the console: {link}" if link else "answer in the console's inbox"
    return (
        f"Reply to this message to answer the customer (/ai hands back, /close closes), or {where}"
    )
