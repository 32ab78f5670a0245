"""Whether a customer asks for a person, in the seven languages the service speaks (en,
de, fr, es, it, nl, pt): a table of phrasings, read as whole words in a lower-cased,
accent-folded message.

A message asks for a person when it names one to talk to ("can I talk to a human?",
"ich möchte mit einem Mitarbeiter sprechen", "je veux parler à un conseiller"), asks
to be put through ("connect me to an agent", "pásame con un asesor"), or is nothing but
the word ("human", "agent please", "operatore"). A question *about* people ("how many
people work there?", "what does an agent cost?") does not: the table needs the asking
words, or the word alone.
"""

from __future__ import annotations

import re
import unicodedata

#: the words that name a person to talk to, per language
_PEOPLE = {
    "en": r"(?:a |an |some |one |the |your |real |live |actual )*"
    r"(?:human(?: being)?|person|agent|representative|rep|operator|someone|somebody"
    r"|staff(?: member)?|employee|manager|customer (?:service|support)(?: agent)?"
    r"|support (?:agent|team|person)|team member|people)",
    "de": r"(?:(?:einem|einer|einen|eine|ein|echten|echte|echter|realen|menschlichen|"
    r"richtigen|jemandem|jemanden|jemand|vom|von|dem|der|ihrem|ihrer|team) )*"
    r"(?:mensch(?:en)?|mitarbeiter(?:in)?|person|berater(?:in)?|ansprechpartner(?:in)?"
    r"|kundenberater(?:in)?|kundendienst|support|jemand(?:em|en)?|agent(?:en)?"
    r"|verantwortlichen|chef(?:in)?)",
    "fr": r"(?:(?:un|une|quelqu'un|quelqu un|vrai|vraie|veritable|conseiller|du|de|"
    r"avec|personne) )*"
    r"(?:humain|personne|conseiller|conseillere|agent|operateur|operatrice|quelqu'un"
    r"|quelqu un|responsable|service client|interlocuteur)",
    "es": r"(?:(?:un|una|alguien|persona|real|humano|de|del|al|con) )*"
    r"(?:humano|persona(?: real)?|agente|asesor(?:a)?|operador(?:a)?|representante"
    r"|alguien|encargado|encargada|atencion al cliente|empleado|empleada)",
    "it": r"(?:(?:un|una|uno|qualcuno|vero|vera|persona|con|del|dell'|al) )*"
    r"(?:umano|persona(?: vera| reale)?|operatore|operatrice|consulente|agente"
    r"|qualcuno|responsabile|assistenza clienti|addetto|addetta)",
    "nl": r"(?:(?:een|iemand|echte|echt|menselijke|van|de|het) )*"
    r"(?:mens|medewerker|persoon|iemand|klantenservice|adviseur|agent|operator"
    r"|verantwoordelijke)",
    "pt": r"(?:(?:um|uma|alguem|pessoa|real|de|do|da|com) )*"
    r"(?:humano|pessoa(?: real)?|atendente|agente|operador(?:a)?|representante"
    r"|alguem|consultor(?:a)?|funcionario|funcionaria|atendimento humano)",
}
#: the words asking to talk to someone: the person named after them may be followed by
#: anything ("talk to a person about my order")
_TALK = {
    "en": r"(?:talk|speak|chat|get through|be put through|be connected|be transferred)"
    r" (?:to|with)|connect me (?:to|with)|put me through to|transfer me to|let me talk to",
    "de": r"(?:sprechen|reden|verbunden werden|chatten) mit|mit(?= .*\b(?:sprechen|reden)\b)|"
    r"verbinden sie mich mit|verbinde mich mit",
    "fr": r"parler (?:a|avec)|discuter avec|(?:me )?(?:mettre|passer) en (?:contact|relation)"
    r" avec|passez-moi|passez moi",
    "es": r"hablar con|pasame con|paseme con|comunicarme con|contactar con|"
    r"(?:me pone|me pasa|me comunica) con",
    "it": r"parlare con|passarmi|mi passi|mettermi in contatto con",
    "nl": r"(?:spreken|praten|chatten) met|met(?= .*\b(?:spreken|praten)\b)|"
    r"verbind me (?:door )?met|doorverbinden met",
    "pt": r"falar com|me (?:passa|transfere|transfira) (?:para|pra)|transferir para",
}
#: the words of a plain request: the person must end the message ("can I get a human",
#: but not "can I get a staff discount")
_WANT = {
    "en": r"(?:can|could|may) i (?:have|get)|i (?:want|need|would like)|i'd like|"
    r"get me|give me|is there",
    "de": r"ich (?:mochte|will|brauche|hatte gern)|(?:kann|konnte|darf) ich",
    "fr": r"je (?:veux|voudrais|souhaite|souhaiterais|demande)|"
    r"(?:puis-je|puis je|est-ce que je peux) avoir",
    "es": r"(?:quiero|necesito|quisiera|me gustaria|puedo hablar con)",
    "it": r"(?:voglio|vorrei|posso avere)",
    "nl": r"ik (?:wil|wil graag|zou graag|wil een)|mag ik|kan ik",
    "pt": r"(?:quero|preciso|gostaria de|posso ter)",
}
#: a message that is only one of these (with "please" and the like) asks for a person
_ALONE = {
    "en": r"human|a human|person|a person|agent|an agent|operator|representative|"
    r"real person|live agent|human agent|customer service|talk to a human",
    "de": r"mensch|mitarbeiter|ein mitarbeiter|ein mensch|berater|kundendienst",
    "fr": r"humain|un humain|conseiller|un conseiller|agent|operateur",
    "es": r"humano|un humano|agente|asesor|operador|persona real",
    "it": r"umano|operatore|un operatore|persona vera",
    "nl": r"mens|medewerker|een medewerker|een mens",
    "pt": r"humano|atendente|um atendente|pessoa real|atendimento humano",
}
_POLITE = r"(?:please|pls|bitte|s'il vous plait|svp|por favor|per favore|alstublieft|aub|now|jetzt|ahora|agora|subito|nu)"  # noqa: E501
#: what may follow the person in a plain request
_TAIL = (
    r"(?:to (?:talk|speak|chat)(?: to| with)?|on the phone|instead|not a bot|asap|"
    r"right now|help|assistance|support|am telefon|zum sprechen|sprechen|au telephone|"
    r"parler|por telefono|hablar|al telefono|parlare|aan de telefoon|spreken|ao telefone|"
    r"falar)"
)
_PATTERNS = {
    language: (
        re.compile(rf"\b(?:{_TALK[language]}) (?:{_PEOPLE[language]})\b"),
        re.compile(rf"\b(?:{_WANT[language]}) (?:{_PEOPLE[language]})(?: {_POLITE}| {_TAIL})*$"),
        re.compile(rf"^(?:{_POLITE} )?(?:{_ALONE[language]})(?: {_POLITE})*$"),
    )
    for language in _PEOPLE
}
LANGUAGES = tuple(_PEOPLE)


def folded(text: str) -> str:
    """``text`` lower-cased, without accents, punctuation as spaces (an apostrophe kept),
    spaces single: how the table reads it."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).replace("ß", "ss")
    plain = plain.replace("’", "'")
    return " ".join(re.sub(r"[^\w' -]+", " ", plain).split())


def asks_for_person(text: str) -> str | None:
    """The language in which ``text`` asks for a person; None when it does not."""
    said = folded(text)
    if not said or len(said) > 300:  # a long message is a question, not a request
        return None
    for language, patterns in _PATTERNS.items():
        if any(pattern.search(said) for pattern in patterns):
            return language
    return None
