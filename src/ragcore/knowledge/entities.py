"""Entities: what a text names, found offline by rules, and the key that makes two
spellings of one entity one node of the knowledge graph (``ragcore.knowledge.graph``).

The rules read a chunk as its writer did. Proper names are capitalised word runs ("Debian
Project", "Bank of America"); a capitalised word opening a sentence is just how sentences
begin ("The", "However", "Install"), so alone it names something only when the text also
capitalises it mid-sentence. Acronyms and mixed-case names (SLA, IPv6, macOS), code-like
identifiers (SKU-1042, apt.conf, /etc/resolv.conf, "Debian 12"), order numbers (#4521),
lowercase terms the text repeats ("service level agreement") and the owner's configured
domain terms (DOMAIN_TERMS, whatever their case in the text) are entities too. A plain
number (5, 2024) is not: it would relate everything that has a date.

``resolve_key`` folds what varies between mentions of one thing (case, spacing, hyphens,
plurals, a possessive), and a definition ("Service Level Agreement (SLA)") makes the
acronym and its long form one entity. Two entities named in one sentence are related
(``CO_OCCURS``): a sentence, not a chunk, because a long chunk would relate everything.

A language model may do the extraction instead (``graph_prompt``, ``read_graph_reply``);
its reply is trusted only for names the passage really contains.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache

import attrs

from ragcore.knowledge.graph import CO_OCCURS, ChunkGraph, Entity, Relation
from ragcore.language import FUNCTION_WORDS

#: entities taken from one sentence for its relations, in order: 12 make 66 pairs
MAX_SENTENCE_ENTITIES = 12
#: relations one chunk contributes at most (a chunk of many short sentences)
MAX_CHUNK_RELATIONS = 256
#: entities one chunk contributes at most
MAX_CHUNK_ENTITIES = 128
#: candidate keys of one question: the store matches only keys it has, so a few too many
#: are cheap, but a pasted page must not become thousands
MAX_QUESTION_KEYS = 64
#: a question's word n-grams, up to this many words ("european data protection board")
MAX_NGRAM = 4
#: a lowercase term: this many words at least and at most, repeated this often in the text
TERM_WORDS = (2, 4)
TERM_REPEATS = 2
#: what a model's reply may contribute per passage
MAX_MODEL_ENTITIES = 32
MAX_MODEL_RELATIONS = 64
#: the passage a model reads, in characters
MAX_PROMPT_CHARS = 6_000

# --- words --------------------------------------------------------------------------------

#: Words that never name an entity alone, nor begin or end one: function words, question
#: words, sentence openers ("However", "Finally"), pronouns, imperatives a manual begins
#: sentences with ("Install", "Click"), months and weekdays (they would relate every dated
#: sentence), in English, German and French.
_STOP = frozenset().union(
    *FUNCTION_WORDS.values(),
    """a about above after again against all almost along already also although always am
    among an and another any anyone anything anyway are around as at away back be because
    been before being below besides between both but by can cannot could dear did do does
    doing done down during each either else enough etc even ever every everyone everything
    few first for from further had has have having he hello her here hers herself hi him
    himself his how however i if in indeed instead into is it its itself just last least
    less let like many may maybe me meanwhile might mine more moreover most mostly much must
    my myself namely near nearly neither never nevertheless next no none nor not nothing now
    of off often on once one only onto or other others otherwise our ours ourselves out over
    own per perhaps please rather really regarding same second see several shall she should
    since so some someone something sometimes soon still such than thank thanks that the
    their theirs them themselves then there thereby therefore these they third this those
    though through throughout thus to today together tomorrow too toward towards under
    unless unlike until up upon us usually very via was we well were what whatever when
    whenever where whereas wherever whether which while who whoever whole whom whose why
    will with within without would yes yesterday yet you your yours yourself yourselves
    additionally also finally furthermore hence likewise similarly consequently later
    earlier recently previously currently initially eventually nowadays tonight overall
    despite following according given across behind beyond inside outside except
    including concerning
    alternatively afterwards note important tip warning caution example examples
    ok okay sure true false various certain
    what which who whom whose why how when where
    add allow apply ask avoid call change check choose click close configure confirm contact
    copy create delete disable download edit enable ensure enter find follow get give go
    install keep log make move need open press read reboot remove replace restart run save
    select send set sign start stop take try turn type update upgrade use using used visit
    wait want write explain describe show
    pourquoi quoi combien warum wann wieso weshalb qué cómo dónde cuándo cuál quién
    waarom wanneer welke
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    januar februar märz mai juni juli oktober dezember montag dienstag mittwoch donnerstag
    freitag samstag sonntag
    janvier février mars avril juin juillet août septembre octobre novembre décembre lundi
    mardi mercredi jeudi vendredi samedi dimanche
    alle allem allen aller alles also andere auch bitte dann daher darum deine dem denn
    deren dessen diese diesem diesen dieser dieses doch dort durch euer hier ihre ihrem
    ihren ihrer jede jedem jeden jeder jedes jetzt kein keine man manche mehr muss nur ob
    ohne sehr seine seinem seinen sich sondern sowie über unter viele weil welche welcher
    wenn werden wo zwischen
    ainsi alors après aussi autre autres avant bien car cela celle celui cet cette chaque
    comme comment dont donc elle elles encore entre ici ils lui leurs même moi nos notre
    où parce pendant peu plus puis quand quel quelle sans selon sous toujours tous tout
    toute toutes très voici voilà""".split(),
)
#: lowercase words that may join the parts of a name ("Bank of America", "Université de
#: Montréal", "Ursula von der Leyen"); never at its edges
_CONNECTORS = frozenset("of the de d du des la le l van von der den di da del dos das y zu".split())
#: lowercase words that may stand inside a repeated term ("terms and conditions")
_TERM_INNER = frozenset("of and for de du des von und für".split())
#: all-caps words that are not acronyms: units, time zones, shouting, notes
_NOT_ACRONYMS = frozenset(
    """am pm kb mb gb tb pb kib mib gib tib hz khz mhz ghz kw kwh mw db utc gmt cet cest
    est pst edt pdt ok id faq fyi asap tbd eta nb ps usd eur gbp chf todo fixme
    inc ltd llc plc gmbh ag kg sa sas sarl bv nv co corp""".split()
)
#: words that number their things ("Chapter 5", "Step 2"): with a number, not a version
_COUNTERS = frozenset(
    """chapter section step page table figure fig part item line article paragraph
    appendix annex level phase stage room floor version release day week month year
    grade class no number option rule point kapitel seite abschnitt schritt""".split()
)
#: what people are, not who: "CEO Roland Busch" is Roland Busch
_ROLES = frozenset(
    """ceo cfo cto coo cio ciso cmo vp svp evp md dr prof mr mrs ms president chairman
    chairwoman chair minister chancellor director manager senator governor mayor judge
    professor king queen pope""".split()
)
_ROMAN = re.compile(r"^[IVX]{2,5}$")

#: a word as written: letters and digits, with dots, hyphens, underscores and apostrophes
#: inside ("apt.conf", "Wi-Fi", "ORD_2024_77", "O'Brien", "Debian's")
_WORD = re.compile(r"[^\W_](?:[\w.\-'’]*[^\W_])?")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'()\[\]]+[^\s<>\"'()\[\].,;:!?]")
_PATH = re.compile(r"(?<![\w/.~:])(?:~|\.{1,2})?(?:/[\w.+@-]+)+/?")
_HASH_NUMBER = re.compile(r"(?<![\w#&])#(\d{2,})\b")
_VERSION = re.compile(r"[ \t]+(v?\d+(?:\.\d+)*)(?![\w%]|[.,]\d)")
_POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$")
#: what may stand between two words of one name: spaces, one line break, an ampersand
_NAME_GAP = re.compile(r"[ \t]+\n?[ \t]*(?:&[ \t]+)?|\n[ \t]*|['’]")

# --- keys ---------------------------------------------------------------------------------


def resolve_key(name: str) -> str:
    """The key that folds the variants of one entity's name: case; spacing; hyphens and
    underscores inside a word ("Wi-Fi", "WiFi", "ORD_2024_77" / "ORD-2024-77"); a word
    written in fragments ("wi fi", "e mail"); an English plural on the last word
    ("invoices", "policies", "boxes", "SLAs"); a possessive ("Debian's").

    Plurals are folded only where they surely are plurals: in lowercase words and in an
    acronym's lowercase "s", never in a capitalised name ("Jenkins", "Linus Torvalds",
    "United States"), an acronym ("GDPR", "AWS") or a mixed-case name ("macOS"), nor in
    "status" or "analysis". A question typed in lowercase may hold either form: its
    candidates have both (``question_keys``).
    """
    return _key(name, fold=None)


@lru_cache(maxsize=8192)  # a text repeats its words: a chunk's n-grams are keyed once
def _key(name: str, fold: bool | None) -> str:
    """``resolve_key``; ``fold``: fold the last word's plural (True), not (False), or as
    its case says (None)."""
    text = " ".join(name.split()).strip(" \t\"'“”‘’«»()[]{}<>,;:!?.")
    text = _POSSESSIVE.sub("", text)
    if "://" in text or text.startswith(("/", "~/", "./", "../")):
        return text.casefold().rstrip("/")
    words = text.split(" ")
    if not words or not words[0]:
        return ""
    last = words[-1]
    head, _, part = last.rpartition("-") if "-" in last else ("", "", last)
    if fold is None:
        fold = _foldable(part)
    part = _singular(part) if fold else part
    words[-1] = f"{head}-{part}" if head else part
    folded = [re.sub(r"(?<=[^\W_])[-_]+(?=[^\W_])", "", w).casefold() for w in words]
    return " ".join(_join_fragments(folded))


def _foldable(word: str) -> bool:
    """Whether ``word``, as written, may be a plural to fold (see ``resolve_key``)."""
    if not word.isalpha():
        return False
    return word.islower() or (word[:-1].isupper() and word.endswith("s") and len(word) >= 3)


#: words ending in s that are not plurals, and -ie words (movie/movies, not movy)
_NOT_PLURALS = frozenset(
    """alias atlas bias canvas chaos gas lens news series species means always perhaps
    whereas towards sometimes thanks ethos kudos linux this his its has was does goes yes
    physics mathematics economics politics ethics""".split()
)
_IE_WORDS = frozenset(
    """movie cookie tie lie pie zombie calorie rookie selfie smoothie goalie brownie newbie
    freebie genie prairie auntie sortie hippie""".split()
)
_CHE_WORDS = frozenset("cache niche headache avalanche moustache mustache psyche quiche".split())


def _singular(word: str) -> str:
    """The singular of an English plural, by its ending; the word itself when it is not one."""
    if word[:-1].isupper() and word.endswith("s"):
        return word[:-1]
    lower = word.lower()
    if len(lower) < 4 or lower in _NOT_PLURALS or not lower.endswith("s"):
        return word
    if lower.endswith(("ss", "us", "is", "ous")) or not re.search(r"[aeiouy]", lower[:-1]):
        return word  # class, status, analysis, famous; https, dns
    if lower.endswith("ies"):
        return word[:-1] if lower[:-1] in _IE_WORDS else word[:-3] + "y"
    if lower.endswith(("sses", "xes", "zzes", "shes")):
        return word[:-2]
    if lower.endswith("ches"):
        return word[:-1] if lower[:-1] in _CHE_WORDS else word[:-2]
    if lower.endswith("uses") and len(lower) >= 5 and lower[-5] in "tnrpl":
        return word[:-2]  # statuses, bonuses, viruses; but causes, houses
    return word[:-1]


def _join_fragments(words: list[str]) -> list[str]:
    """Words written in fragments joined: "wi fi" as "wifi" (two of at most two letters),
    "e mail" as "email" (a single letter before a word); not a function word."""
    joined: list[str] = []
    for word in words:
        if joined:
            previous = joined[-1]
            if (
                previous.isalpha()
                and word.isalpha()
                and previous not in _STOP
                and word not in _STOP
                and (len(previous) == 1 or (len(previous) <= 2 and len(word) <= 2))
            ):
                joined[-1] = previous + word
                continue
        joined.append(word)
    return joined


# --- aliases ------------------------------------------------------------------------------

_DEFINED = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9&]{1,9})\s*\)")
_DEFINING = re.compile(r"\b([A-Z][A-Za-z0-9&]*[A-Z][A-Za-z0-9&]*s?)\s*\(\s*([^()]{3,80}?)\s*\)")


def aliases(text: str) -> dict[str, str]:
    """The acronyms ``text`` defines, acronym key -> long form's key: "Service Level
    Agreement (SLA)" and "SLA (Service Level Agreement)" both give {"sla": "service level
    agreement"}.

    The long form's key is the entity's: it says what the entity is, and it is the same in
    every document, whereas one acronym may stand for different things in different
    documents ("PR (pull request)", "PR (public relations)"), which stay apart.
    """
    return {short: long for short, long, _, _ in _definitions(text)}


def document_aliases(texts: Sequence[str]) -> dict[str, str]:
    """The acronyms a document defines anywhere (the first definition of each), for its
    other chunks: one defines "SLA" in its first chunk, the seventh just says "SLA"."""
    found: dict[str, str] = {}
    for text in texts:
        for short, long in aliases(text).items():
            found.setdefault(short, long)
    return found


def _definitions(text: str) -> Iterator[tuple[str, str, int, int]]:
    """(acronym key, long key, start, end of the long form) for each definition."""
    for match in _DEFINED.finditer(text):
        acronym = match.group(1)
        if not _acronym_like(acronym):
            continue
        before = text[max(0, match.start() - 160) : match.start()]
        spans = [(m.start(), m.group()) for m in _WORD.finditer(before)]
        letters = _letters(acronym)
        for count in range(1, min(len(letters) + 3, len(spans)) + 1):
            window = spans[-count:]
            words = [w for _, w in window]
            tail = before[window[-1][0] + len(words[-1]) :]
            if tail.strip() or words[0].lower() in _STOP or words[-1].lower() in _STOP:
                continue
            if _initials_match(words, letters):
                start = match.start() - len(before) + window[0][0]
                long = text[start : match.start()].strip()
                yield resolve_key(acronym), resolve_key(long), start, start + len(long)
                break
    for match in _DEFINING.finditer(text):
        acronym, long = match.group(1), match.group(2)
        words = _WORD.findall(long)
        if _acronym_like(acronym) and _initials_match(words, _letters(acronym)):
            start = match.start(2)
            yield resolve_key(acronym), resolve_key(long), start, start + len(long)


def _acronym_like(word: str) -> bool:
    capitals = sum(c.isupper() for c in word)
    return capitals >= 2 and capitals >= len(word) / 2 and word.lower() not in _NOT_ACRONYMS


def _letters(acronym: str) -> str:
    letters = acronym[:-1] if acronym.endswith("s") and acronym[:-1].isupper() else acronym
    return "".join(c for c in letters.lower() if c.isalpha())


def _initials_match(words: Sequence[str], letters: str) -> bool:
    """Whether ``words`` begin with ``letters``: every word's initial, or only the
    content words' ("Department of Defense (DoD)", "Bank for International Settlements
    (BIS)"); a hyphenated word gives an initial a part ("Wi-Fi Protected Access (WPA)")."""
    if not words or len(words) > len(letters) + 2:
        return False
    initials = "".join(w[0].lower() for w in words)
    content = "".join(w[0].lower() for w in words if w.lower() not in _STOP)
    parts = "".join(p[0].lower() for w in words for p in w.split("-") if p)
    return letters in (initials, content, parts)


# --- sentences and words ------------------------------------------------------------------

_BOUNDARY = re.compile(
    r"(?P<stop>[.!?…]+)[\"'”’)\]]*\s+|\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*•#>|]|\d+[.)]\s))"
    r"|(?P<line>\n)(?=[ \t]*[A-Z])"
)
#: a line this short, followed by one that begins with a capital, is a heading or an item
#: of its own; a longer one is prose wrapped mid-sentence
SHORT_LINE = 50
_OPENS = re.compile(r"[:|]")
_ABBREVIATIONS = frozenset(
    """e.g i.e etc vs cf mr mrs ms dr prof st inc ltd co corp no nr approx fig z.b bzw
    ca usw d.h jr sr""".split()
)


def _sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as (start, end): split after . ! ? (not after an
    abbreviation or an initial), at blank lines, and before a line that begins a new
    item (a bullet, a heading, an item's capital after a short line)."""
    spans = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group("stop") == ".":
            before = re.search(r"[\w.]+$", text[max(start, match.start() - 12) : match.start()])
            word = before.group().lower() if before else ""
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        if match.group("line"):
            line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()].strip()
            if len(line) >= SHORT_LINE and not line.endswith((":", ";")):
                continue
        spans.append((start, match.end("stop") if match.group("stop") else match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


@attrs.frozen
class _Word:
    start: int
    end: int
    text: str  # as written, without a possessive
    shape: str  # "title", "caps", "mixed", "lower", "code", "other"
    initial: bool  # opens its sentence (or follows a colon)
    possessive: bool = False


def _shape(word: str) -> str:
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return "other"
    if "_" in word or "." in word or ("-" in word and any(c.isdigit() for c in word)):
        return "code"
    if word[0].isdigit():  # 2FA; not 10GB, 3D, 1st
        tail = word.lstrip("0123456789")
        ok = tail.isupper() and len(tail) >= 2 and tail.lower() not in _NOT_ACRONYMS
        return "caps" if ok and tail.isalpha() else "other"
    if any(c.isdigit() for c in word):  # IPv6, MP3, HTTP2 by their capitals; ext4, x86
        cased = "".join(c for c in word if c.isalpha())
        return "caps" if cased.isupper() else "code" if cased.islower() else "mixed"
    parts = [p for p in word.split("-") if p]
    if all(p.isupper() for p in parts):
        return "caps"
    if all(p.islower() for p in parts):
        return "lower"
    first = parts[0]
    if first[0].isupper() and all(p[1:].islower() or len(p) == 1 for p in parts):
        return "title"  # Wi-Fi, Jean-Luc, O'Brien
    if first[:-1].isupper() and first.endswith("s") and len(parts) == 1:
        return "caps"  # SLAs
    return "mixed"


def _words(text: str, start: int, end: int) -> list[_Word]:
    """The words of the sentence ``text[start:end]``."""
    words: list[_Word] = []
    links = [m.span() for p in (_EMAIL, _URL, _PATH) for m in p.finditer(text, start, end)]
    for match in _WORD.finditer(text, start, end):
        raw, at = match.group(), match.start()
        if any(a <= at < b for a, b in links):
            continue  # the words of an address are not the text's words
        if "." in raw and not _dotted_identifier(raw):
            pieces = [(m.start() + at, m.group()) for m in re.finditer(r"[^.]+", raw)]
        else:
            pieces = [(at, raw)]
        for piece_start, piece in pieces:
            elided = re.match(r"^([a-zA-Z][’'])(?=[A-Z])", piece)
            if elided:  # l'Europe, d'Ivoire: the article is a connector
                cut = elided.end()
                words.append(
                    _Word(piece_start, piece_start + cut - 1, piece[: cut - 1], "lower", False)
                )
                piece_start, piece = piece_start + cut, piece[cut:]
            bare = _POSSESSIVE.sub("", piece)
            # a colon opens a sentence within it, and a table's pipe a cell
            initial = not words or bool(_OPENS.search(text, words[-1].end, piece_start))
            words.append(
                _Word(
                    piece_start, piece_start + len(bare), bare, _shape(bare), initial, bare != piece
                )
            )
    return words


def _dotted_identifier(word: str) -> bool:
    """apt.conf, sources.list, example.com, Node.js, v1.2.3; not e.g, U.S, end.Next"""
    parts = word.split(".")
    return (
        all(len(p) >= 2 for p in parts)
        and any(c.isalpha() for c in word)
        and not (
            len(parts) == 2
            and parts[0].isalpha()
            and parts[1][:1].isupper()
            and parts[0][:1].islower()
        )
    )


# --- mentions -----------------------------------------------------------------------------


@attrs.frozen
class _Mention:
    start: int
    end: int
    key: str
    name: str
    kind: str
    rank: int  # lower claims its span first
    host: bool = False  # acronyms and a version's name may lie inside it


@attrs.frozen
class _Sentence:
    start: int
    end: int
    words: tuple[_Word, ...]


@attrs.frozen
class _Reading:
    """What the whole text says about its capitalised words, for each sentence's rules."""

    #: keys of the capitalised runs mid-sentence ("Debian", not "Security" of "Debian
    #: Security Team"): a sentence's first word is a name when one of these
    mid_capitals: frozenset[str]
    lowercase: frozenset[str]  # written in lowercase somewhere
    terms: frozenset[str]  # keys of the repeated lowercase terms


_DOMAIN, _CODE, _NAME, _TERM = 0, 1, 2, 3


def _mentions(text: str, domain_terms: Sequence[str]) -> list[tuple[int, _Mention]]:
    """(sentence index, mention) of every entity named in ``text``, in order."""
    sentences = [_Sentence(s, e, tuple(_words(text, s, e))) for s, e in _sentences(text)]
    reading = _read(sentences)
    found: list[tuple[int, _Mention]] = []
    domain = _domain_patterns(domain_terms)
    for index, sentence in enumerate(sentences):
        primary, secondary = _sentence_mentions(text, sentence, reading, domain)
        found.extend((index, m) for m in _claim(primary, secondary))
    definitions = list(_definitions(text))
    for _, long, start, end in definitions:
        index = next((i for i, s in enumerate(sentences) if s.start <= start < s.end), 0)
        if not any(m.key == long for _, m in found):
            name = " ".join(text[start:end].split())
            kind = "term" if name.islower() else "name"
            found.append((index, _Mention(start, end, long, name, kind, _NAME)))
    found.sort(key=lambda item: item[1].start)
    return found


def _read(sentences: Sequence[_Sentence]) -> _Reading:
    """What the whole text says about its words (``_Reading``)."""
    capitals: set[str] = set()
    lowercase: set[str] = set()
    counts: dict[str, int] = {}
    for sentence in sentences:
        run: list[_Word] = []
        for word in [*sentence.words, None]:
            if word is not None and word.shape == "lower":
                lowercase.add(word.text.casefold())
            if (
                word is not None
                and word.shape in ("title", "mixed", "caps")
                and word.text.casefold() not in _STOP
                and not word.initial
            ):
                run.append(word)
                continue
            if run:
                capitals.add(resolve_key(" ".join(w.text for w in run)))
                run = []
        for run in _lower_runs(sentence.words):
            for key, _, _ in _term_candidates(run):
                counts[key] = counts.get(key, 0) + 1
    repeated = {k for k, n in counts.items() if n >= TERM_REPEATS}
    # a term inside a longer one that repeats as often is the longer one's part, not a term
    terms = {
        k
        for k in repeated
        if not any(
            len(o) > len(k) and f" {k} " in f" {o} " and counts[o] >= counts[k] for o in repeated
        )
    }
    return _Reading(frozenset(capitals), frozenset(lowercase), frozenset(terms))


def _lower_runs(words: Sequence[_Word]) -> Iterator[list[_Word]]:
    """Runs of lowercase words with only spaces between them (a sentence's first word
    counts in lowercase)."""
    run: list[_Word] = []
    for word in words:
        lower = word.shape == "lower" or (word.initial and word.shape == "title")
        lower = lower and word.text.replace("-", "").isalpha()
        if run and (not lower or not _spaced(run[-1], word)):
            yield run
            run = []
        if lower:
            run.append(word)
    if run:
        yield run


def _spaced(a: _Word, b: _Word) -> bool:
    return not a.possessive and b.start - a.end >= 1 and b.start - a.end <= 3


def _term_candidates(run: Sequence[_Word]) -> Iterator[tuple[str, int, int]]:
    """(key, first word's index, end index) of each n-gram of ``run`` that may be a term."""
    low, high = TERM_WORDS
    lowered = [w.text.lower() for w in run]
    for i in range(len(run)):
        for n in range(low, high + 1):
            j = i + n
            if j > len(run):
                break
            phrase = lowered[i:j]
            if not (_edge_word(phrase[0]) and _edge_word(phrase[-1])):
                continue
            if any(w in _STOP and w not in _TERM_INNER for w in phrase[1:-1]):
                continue
            yield _key(" ".join(phrase), fold=True), i, j


def _edge_word(word: str) -> bool:
    return len(word) >= 3 and word not in _STOP


def _sentence_mentions(
    text: str, sentence: _Sentence, reading: _Reading, domain: Sequence[tuple[str, re.Pattern[str]]]
) -> tuple[list[_Mention], list[_Mention]]:
    primary: list[_Mention] = []
    secondary: list[_Mention] = []
    segment = text[sentence.start : sentence.end]
    offset = sentence.start
    for key, pattern in domain:
        for match in pattern.finditer(segment):
            name = " ".join(match.group().split())
            primary.append(
                _Mention(match.start() + offset, match.end() + offset, key, name, "domain", _DOMAIN)
            )
    for pattern in (_EMAIL, _URL, _PATH):
        for match in pattern.finditer(segment):
            raw = match.group().rstrip(".,;:")
            if pattern is _PATH and (len(raw) < 3 or not re.search(r"[A-Za-z]", raw)):
                continue
            start = match.start() + offset
            primary.append(_Mention(start, start + len(raw), _key(raw, False), raw, "code", _CODE))
    for match in _HASH_NUMBER.finditer(segment):
        primary.append(
            _Mention(
                match.start() + offset,
                match.end() + offset,
                match.group(1),
                match.group(),
                "number",
                _CODE,
            )
        )
    words = sentence.words
    shouting = _shouting(words)

    def named(first: _Word, last: _Word, kind: str, into: list[_Mention]) -> None:
        """A name, and its versioned form when a version follows ("Debian 12")."""
        name = " ".join(text[first.start : last.end].split())
        mention = _Mention(first.start, last.end, resolve_key(name), name, kind, _NAME, True)
        version = _version_after(text, last, sentence.end)
        if version is None:
            into.append(mention)
            return
        end, number = version
        full = f"{name} {number}"
        primary.append(_Mention(first.start, end, resolve_key(full), full, "code", _CODE, True))
        secondary.append(mention)

    for word in words:
        if word.shape == "code" and _code_like(word.text):
            key = _key(word.text, False)
            primary.append(_Mention(word.start, word.end, key, word.text, "code", _CODE))
        elif word.shape == "caps" and not shouting and _acronym(word.text):
            named(word, word, "acronym", secondary)
        elif word.shape == "mixed" and word.text.lower() not in _NOT_ACRONYMS:
            named(word, word, "name", secondary)
    if not _title_case_heading(words):
        for run in _name_runs(text, words, reading):
            named(run[0], run[-1], "name", primary)
    for run in _lower_runs(words):
        taken = [False] * len(run)
        candidates = sorted(_term_candidates(run), key=lambda c: (c[1] - c[2], c[1]))
        for key, i, j in candidates:
            if key in reading.terms and not any(taken[i:j]):
                taken[i:j] = [True] * (j - i)
                name = " ".join(text[run[i].start : run[j - 1].end].split())
                primary.append(_Mention(run[i].start, run[j - 1].end, key, name, "term", _TERM))
    return primary, secondary


def _claim(primary: Sequence[_Mention], secondary: Sequence[_Mention]) -> list[_Mention]:
    """The mentions that keep their span: a domain term first, then codes, names and
    terms, longer first; an acronym or a mixed-case name also inside a name ("SLA" in
    "Acme SLA"), and a version's name inside it ("Debian" in "Debian 12")."""
    kept: list[_Mention] = []
    for mention in sorted(primary, key=lambda m: (m.rank, m.start - m.end, m.start)):
        if not any(_overlap(mention, other) for other in kept):
            kept.append(mention)
    inner: list[_Mention] = []
    for mention in secondary:
        blocked = any(
            _overlap(mention, other)
            and not (other.host and other.start <= mention.start and mention.end <= other.end)
            for other in kept
        )
        if not blocked and not any(_overlap(mention, other) for other in inner):
            inner.append(mention)
    return sorted(kept + inner, key=lambda m: (m.start, m.end - m.start))


def _overlap(a: _Mention, b: _Mention) -> bool:
    return a.start < b.end and b.start < a.end


def _shouting(words: Sequence[_Word]) -> bool:
    """A line in capitals ("DO NOT REMOVE THE COVER"): its words are not acronyms."""
    caps = [w for w in words if w.shape == "caps"]
    return len(caps) >= 3 and any(w.text.lower() in _STOP for w in caps)


def _title_case_heading(words: Sequence[_Word]) -> bool:
    """A heading in title case ("Getting Started With Debian"): its capitals say nothing."""
    if len(words) < 3:
        return False
    capitalised = [w for w in words if w.shape in ("title", "caps", "mixed")]
    inner_stop = any(
        w.shape == "title" and not w.initial and w.text.lower() in _STOP for w in words
    )
    return inner_stop and len(capitalised) >= 0.6 * len(words)


def _acronym(word: str) -> bool:
    bare = word[:-1] if word.endswith("s") and word[:-1].isupper() else word
    letters = sum(c.isalpha() for c in bare)
    return letters >= 2 and bare.lower() not in _NOT_ACRONYMS and not _ROMAN.match(bare)


def _code_like(word: str) -> bool:
    """An identifier with digits, underscores or dots: SKU-1042, ORD_2024_77, apt.conf,
    ext4, IPv6-ready; not a measure (10am, 64bit, 24-hour) or a plain number."""
    if not any(c.isalpha() for c in word):
        return False
    if "_" in word or "." in word:
        return True
    if not word[0].isalpha():
        return bool(re.fullmatch(r"\d+[A-Z]{2,}", word))  # 2FA
    if "-" in word:
        return any(c.isdigit() for c in word)
    # letters then digits: x86, ext4, amd64, HTTP2, MP3, B2B; not v2 or q3
    return len(word) >= 3


def _name_runs(text: str, words: Sequence[_Word], reading: _Reading) -> Iterator[list[_Word]]:
    """The capitalised runs that are names: capitalised words with at most two connectors
    between them ("Bank of America", "Université de Montréal"), without function words
    ("The", "In"). A sentence's first word joins only when it is not an ordinary word
    written with a capital; a run of one word that opens its sentence is a name only when
    the text capitalises it mid-sentence too."""
    run: list[_Word] = []
    connectors: list[_Word] = []

    def finish() -> Iterator[list[_Word]]:
        if run:
            versioned = _version_after(text, run[-1], words[-1].end) is not None
            yield from _accepted(run, reading, versioned)

    for word in words:
        lower = word.text.lower()
        capital = word.shape in ("title", "caps", "mixed") and lower not in _STOP
        capital = capital and lower not in _ROLES
        if capital and run and not connectors and not _joined(text, run[-1], word):
            yield from finish()
            run = []
        if capital and run and connectors:
            if _joined(text, run[-1], connectors[0]) and _joined(text, connectors[-1], word):
                run.extend(connectors)
            else:
                yield from finish()
                run = []
            connectors = []
        if capital:
            run.append(word)
            if word.possessive:
                yield from finish()
                run = []
            continue
        if (
            run
            and word.shape == "lower"
            and word.text.lower() in _CONNECTORS
            and len(connectors) < 2
            and _joined(text, (connectors or run)[-1], word)
        ):
            connectors.append(word)
            continue
        yield from finish()
        run, connectors = [], []
    yield from finish()


def _joined(text: str, a: _Word, b: _Word) -> bool:
    """Whether two words stand together in one name: only spaces (one line break, an
    ampersand) between them, or the apostrophe of an elided article (d'Ivoire)."""
    return _NAME_GAP.fullmatch(text, a.end, b.start) is not None


def _accepted(run: Sequence[_Word], reading: _Reading, versioned: bool) -> Iterator[list[_Word]]:
    """The run without an ordinary first word, when it is still a name (see
    ``_name_runs``); ``versioned``: a version follows it ("Debian 12" opening a sentence)."""
    words = list(run)
    if words[0].initial and words[0].shape == "title" and _ordinary(words[0], reading):
        words = words[1:]
        while words and words[0].shape == "lower":
            words = words[1:]  # a connector left at the edge
    while words and words[-1].shape == "lower":
        words = words[:-1]
    if not words:
        return
    capitals = [w for w in words if w.shape != "lower"]
    if len(capitals) == 1:
        word = capitals[0]
        if word.shape != "title" or word.text.lower() in _COUNTERS:
            return  # an acronym or a mixed-case name alone: its own rule; "Step" (2)
        if word.initial and resolve_key(word.text) not in reading.mid_capitals and not versioned:
            return
    yield words


_VERB_ENDINGS = ("ing", "ed", "ly")


def _ordinary(word: _Word, reading: _Reading) -> bool:
    """A sentence's first word written with a capital only because it opens the sentence:
    the text writes it in lowercase elsewhere, or it reads as a verb or an adverb."""
    lower = word.text.casefold()
    if lower in reading.lowercase:
        return True
    capitalised = resolve_key(word.text) in reading.mid_capitals
    return lower.endswith(_VERB_ENDINGS) and len(lower) > 5 and not capitalised


def _version_after(text: str, last: _Word, end: int) -> tuple[int, str] | None:
    """The version after a name ("Debian 12", "Python 3.11"): its end and number. Not a
    year (2024), nor the number of a chapter, a step or a page."""
    if last.text.lower() in _COUNTERS or last.possessive:
        return None
    match = _VERSION.match(text, last.end, end)
    if not match:
        return None
    number = match.group(1)
    digits = number.lstrip("v")
    if "." not in digits and (len(digits) > 5 or 1900 <= int(digits) <= 2100):
        return None
    return match.end(), number


def _domain_patterns(terms: Sequence[str]) -> list[tuple[str, re.Pattern[str]]]:
    """A pattern for each configured term: any case (but a term in capitals that is also a
    function word, "IT", keeps its capitals), word boundaries, its words apart or
    hyphenated, the last one singular or plural. Longer terms first: they win a span."""
    patterns = []
    for term in sorted({t.strip() for t in terms if t.strip()}, key=lambda t: (-len(t), t)):
        words = [w for w in re.split(r"[\s_-]+", term) if w]
        if not words:
            continue
        singular = _singular(words[-1].lower()) if words[-1].isalpha() else words[-1].lower()
        endings = sorted(
            {re.escape(words[-1].lower()), re.escape(singular) + r"(?:s|es)?"}
            | ({re.escape(singular[:-1]) + "ies"} if singular.endswith("y") else set()),
            key=len,
            reverse=True,
        )
        body = r"[\s_-]*".join(
            [*(re.escape(w) for w in words[:-1]), "(?:" + "|".join(endings) + ")"]
        )
        flags: re.RegexFlag | int = re.IGNORECASE
        if term.isupper() and term.lower() in _STOP:
            # "IT" or "US" configured: the department, the country, not every "it" or "us"
            body, flags = re.escape(term), 0
        pattern = re.compile(rf"(?<![\w.-]){body}(?:['’]s)?(?![\w-])", flags)
        patterns.append((resolve_key(term), pattern))
    return patterns


# --- the public rules -----------------------------------------------------------------------


def extract(text: str, domain_terms: Sequence[str] = ()) -> tuple[Entity, ...]:
    """The entities ``text`` names, each once (by key), in the order they first appear.

    An acronym the text defines has its long form's key (``aliases``) and is shown by the
    long form; a domain term's key is its configured form's, and its kind stays "domain"
    wherever else the rules saw it."""
    return _entities(_resolved(text, domain_terms, None))


def chunk_graph(
    chunk_id: int,
    text: str,
    domain_terms: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> ChunkGraph:
    """What a chunk contributes to the graph: its entities, and a ``CO_OCCURS`` relation
    between every two named in one sentence (the first ``MAX_SENTENCE_ENTITIES`` of each
    sentence; each pair once, source key before target key).

    ``aliases``: the document's acronyms (``document_aliases``), for a chunk that uses an
    acronym another chunk defined; the chunk's own definitions come first."""
    mentions = _resolved(text, domain_terms, aliases)
    entities = _entities(mentions)[:MAX_CHUNK_ENTITIES]
    kept = {entity.key for entity in entities}
    by_sentence: dict[int, list[str]] = {}
    for sentence, mention in mentions:
        keys = by_sentence.setdefault(sentence, [])
        if mention.key in kept and mention.key not in keys:
            keys.append(mention.key)
    pairs: dict[tuple[str, str], None] = {}
    for keys in by_sentence.values():
        keys = keys[:MAX_SENTENCE_ENTITIES]
        for i, first in enumerate(keys):
            for second in keys[i + 1 :]:
                pairs.setdefault((min(first, second), max(first, second)), None)
    relations = tuple(Relation(a, b, CO_OCCURS) for a, b in list(pairs)[:MAX_CHUNK_RELATIONS])
    return ChunkGraph(chunk_id, entities, relations)


def question_keys(
    question: str,
    domain_terms: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The keys to look up in the graph for a question as users type it ("what does the
    sla cover for acme corp?"): the keys of the entities ``extract`` finds in it, then the
    key of every run of one to ``MAX_NGRAM`` words that neither begins nor ends with a
    function or question word ("sla", "acme corp", "sla cover"), shortest runs first, at
    most ``MAX_QUESTION_KEYS``.

    Lowercase typing hides what the rules read from capitals, so a run's key is taken as
    typed and with its last word folded and not ("jenkins" may be a name or a plural): the
    store only matches keys it has, a few too many cost nothing. ``aliases``, when the
    caller knows them, add the long form's key of an acronym asked about."""
    found: dict[str, None] = {}

    def add(key: str) -> None:
        if key and key not in _STOP and (not key.isdigit() or len(key) >= 3):
            found.setdefault(key, None)
            if aliases and key in aliases:
                found.setdefault(aliases[key], None)

    for entity in extract(question, domain_terms):
        if entity.kind == "domain":  # "IT" configured: the one place a stop word is a key
            found.setdefault(entity.key, None)
        add(entity.key)
    words = [_POSSESSIVE.sub("", w) for w in _WORD.findall(question)]
    for size in range(1, MAX_NGRAM + 1):
        for i in range(len(words) - size + 1):
            run = words[i : i + size]
            first, last = run[0].casefold(), run[-1].casefold()
            if first in _STOP or last in _STOP or len(first) < 2 or len(last) < 2:
                continue
            phrase = " ".join(run)
            for key in (resolve_key(phrase), _key(phrase.lower(), True), _key(phrase, False)):
                add(key)
    return tuple(list(found)[:MAX_QUESTION_KEYS])


def _resolved(
    text: str, domain_terms: Sequence[str], known: Mapping[str, str] | None
) -> list[tuple[int, _Mention]]:
    """The text's mentions with acronyms keyed by their long forms: the text's own
    definitions first, then those ``known`` (the document's)."""
    folding = {**(known or {}), **aliases(text)}
    resolved = []
    for sentence, mention in _mentions(text, domain_terms):
        key = folding.get(mention.key, mention.key)
        resolved.append(
            (sentence, attrs.evolve(mention, key=key) if key != mention.key else mention)
        )
    return resolved


def _entities(mentions: Sequence[tuple[int, _Mention]]) -> tuple[Entity, ...]:
    """One entity a key, in order of first mention: shown as the long form when an
    acronym was folded into it (the mention whose own key it is), kind "domain" when a
    domain term."""
    first: dict[str, _Mention] = {}
    own: dict[str, _Mention] = {}
    domain: set[str] = set()
    for _, mention in mentions:
        first.setdefault(mention.key, mention)
        if mention.kind == "domain":
            domain.add(mention.key)
        if resolve_key(mention.name) == mention.key or mention.kind in ("domain", "term"):
            own.setdefault(mention.key, mention)
    entities = []
    for key, mention in first.items():
        shown = own.get(key, mention)
        kind = "domain" if key in domain else shown.kind
        entities.append(Entity(key, shown.name, kind))
    return tuple(entities)


# --- a language model's extraction ----------------------------------------------------------


def graph_prompt(text: str) -> str:
    """The task for a language model: the passage's entities and the relations it states,
    as JSON (``read_graph_reply`` reads the reply)."""
    passage = text if len(text) <= MAX_PROMPT_CHARS else text[:MAX_PROMPT_CHARS]
    return (
        "Extract the knowledge graph of the passage below: the entities it names (people, "
        "organisations, places, products, software, documents, policies, codes, terms) and "
        "the relations the passage states between them.\n"
        "Reply with JSON only, in this form:\n"
        '{"entities": [{"name": "...", "type": "..."}], '
        '"relations": [{"source": "...", "target": "...", "type": "..."}]}\n'
        "Write each name exactly as the passage writes it. A relation's source and target "
        "are names from the entities; its type is a short verb phrase in snake_case "
        f"(founded, part_of, applies_to). At most {MAX_MODEL_ENTITIES} entities and "
        f"{MAX_MODEL_RELATIONS} relations; none when the passage names none.\n\n"
        f"Passage:\n{passage}"
    )


def read_graph_reply(reply: str, text: str) -> tuple[tuple[Entity, ...], tuple[Relation, ...]]:
    """The entities and relations of a model's reply to ``graph_prompt``, trusted only as
    far as the passage bears them out: the JSON found in the reply (inside a code fence,
    before or after prose), entities whose name the passage contains (any case), keyed
    by ``resolve_key``; relations between two of those, typed in snake_case. A reply
    that is not such JSON gives nothing."""
    data = _json_object(reply)
    if data is None:
        return (), ()
    haystack = " ".join(text.split()).casefold()
    entities: dict[str, Entity] = {}
    names: dict[str, str] = {}  # a name as the model wrote it, casefolded -> key
    for item in _items(data.get("entities")):
        name = " ".join(str(item.get("name") or "").split())
        if not name or not _contains(haystack, name.casefold()):
            continue
        key = resolve_key(name)
        if not key or key in _STOP:
            continue
        names[name.casefold()] = key
        if key not in entities and len(entities) < MAX_MODEL_ENTITIES:
            entities[key] = Entity(key, name, _snake(item.get("type")) or "name")
    relations: dict[tuple[str, str, str], Relation] = {}
    for item in _items(data.get("relations")):
        source = names.get(" ".join(str(item.get("source") or "").split()).casefold(), "")
        target = names.get(" ".join(str(item.get("target") or "").split()).casefold(), "")
        if source in entities and target in entities and source != target:
            kind = _snake(item.get("type")) or "related_to"
            relations.setdefault((source, target, kind), Relation(source, target, kind))
    return tuple(entities.values()), tuple(relations.values())[:MAX_MODEL_RELATIONS]


def _json_object(reply: str) -> dict[str, object] | None:
    """The first JSON object in ``reply`` that has entities or relations."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", reply):
        try:
            value, _ = decoder.raw_decode(reply, match.start())
        except ValueError:
            continue
        if isinstance(value, dict) and ("entities" in value or "relations" in value):
            return value
    return None


def _items(value: object) -> list[dict[str, object]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _contains(haystack: str, name: str) -> bool:
    """Whether the passage (casefolded, spaces collapsed) holds ``name`` as whole words."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", haystack) is not None


def _snake(value: object) -> str:
    if not isinstance(value, str):
        return ""
    return re.sub(r"[^\w]+", "_", value.strip().lower()).strip("_")[:40]
