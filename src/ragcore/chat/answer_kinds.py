"""What kind of answer a question asks for, and whether a sentence carries one.

"How long does GnuCash keep its backups?" is answered by a sentence with a number in
it, "Which file lists the DNS servers?" by one that names a file, "Which package
provides quotas?" by one that names a package, a module or a variable. Among the
sentences that share the question's words, the offline answerer
(``ragcore.chat.extractive``) prefers one that carries what is asked.

A question is read by its first words, in English and in the six other languages whose
questions are translated (``ragcore.chat.translation``); a question of no known kind asks
for nothing in particular.
"""

from __future__ import annotations

import enum
import re


class AnswerKind(enum.Enum):
    NUMBER = "number"  # how many, how long, how large: a quantity
    PLACE = "place"  # which file, folder or directory: a path or a file's name
    NAME = "name"  # which package, module, command or variable: an identifier


#: "which", in the languages whose questions are read (one may begin "in which", "auf welchem")
_WHICH = (
    r"(which|what|quel|quelle|quels|quelles|welche|welcher|welches|welchem|welchen|welk|welke"
    r"|qu[eé]|cu[aá]l|quale|quali|qual|quais)"
)
_NUMBER_QUESTION = re.compile(
    r"^(in |into |after |for )?(how (many|much|long|large|big|often|far|fast|old|high|small)"
    r"|combien|wie (viele?|lange|oft|gro(ß|ss)|weit|hoch)"
    r"|cu[aá]nt[oa]s?|quant[ioae]s?|hoe(veel| lang| vaak| groot))\b"
    rf"|\b{_WHICH} (is the )?(\w+ )?(number|size|port|percentage|amount|limit|version"
    r"|porte?|puerto|poort|versione?|versi[oó]n|versie|vers[aã]o)\b"
)
_PLACE_QUESTION = re.compile(
    rf"\b{_WHICH} ((configuration|config|data|log) )?"
    r"(file(?! (format|type))|files|folder|directory|path|fichier|dossier|r[eé]pertoire"
    r"|datei|verzeichnis|ordner|archivo|carpeta|directorio|cartella|bestand|map"
    r"|arquivo|ficheiro|pasta|diret[oó]rio)\b"
    r"|^(where|o[uù]|wo|d[oó]nde|dove|waar|onde)\b.*\b(file|folder|directory|stored|kept"
    r"|fichier|datei|archivo|bestand|ficheiro|arquivo)"
)
_NAME_QUESTION = re.compile(
    rf"\b{_WHICH} (debian |perl |python |software )?"
    r"(package|module|command|program|tool|variable|environment variable|directive"
    r"|option|setting|paquet|commande|programme|paket|modul|befehl|programm|paquete"
    r"|m[oó]dulo|comando|programa|pacchetto|programma|variabile|pakket|commando"
    r"|variabele|pacote|vari[aá]vel)\b"
)

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
    "|thirty|forty|fifty|sixty|hundred|thousand|million|once|twice|daily|weekly|monthly"
    "|hourly|yearly"
)
_NUMBER = re.compile(rf"\d|\b({_NUMBER_WORDS})\b", re.IGNORECASE)
#: a path ("/etc/resolv.conf", "~/.local/share"), or a file's name with its extension
_PLACE = re.compile(
    r"(^|[\s(\"'`])(~?/[\w.-]+)|\b[\w-]+\.(conf|cfg|ini|list|log|xml|html?|txt|d|gnucash"
    r"|db|json|ya?ml|pem|key|csv|rc)\b|(?<!\w)\.[a-z][a-z0-9]{1,7}\b",
    re.IGNORECASE,
)
#: an identifier: "mod_http2", "Finance::Quote", "ALPHAVANTAGE_API_KEY", "isc-dhcp-server",
#: "KeepAliveTimeout", or a command's option ("--download-only")
_NAME = re.compile(
    r"\b[a-z0-9]+([_-][a-z0-9]+)+\b|\b\w+::\w+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"
    r"|\b[A-Z][a-z]+[A-Z]\w*\b|(^|\s)--?[a-z][\w-]*"
)


def answer_kind(question: str) -> AnswerKind | None:
    """The kind of answer ``question`` asks for; None for any other question."""
    asked = " ".join(question.lower().split()).lstrip("¿¡")  # "¿Cuántos …?"
    if _NUMBER_QUESTION.search(asked):
        return AnswerKind.NUMBER
    if _PLACE_QUESTION.search(asked):
        return AnswerKind.PLACE
    if _NAME_QUESTION.search(asked):
        return AnswerKind.NAME
    return None


def carries(text: str, kind: AnswerKind, asked: str = "", code: bool = False) -> bool:
    """Whether a sentence (``code``: a code block) holds an answer of ``kind`` that the
    question ``asked`` does not already give: "GnuCash" answers no "which package" asked
    about GnuCash."""
    if kind is AnswerKind.NAME and code:
        return True
    pattern = {AnswerKind.NUMBER: _NUMBER, AnswerKind.PLACE: _PLACE, AnswerKind.NAME: _NAME}[kind]
    given = asked.casefold()
    return any(found.group().strip().casefold() not in given for found in pattern.finditer(text))
