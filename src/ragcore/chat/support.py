"""Whether the retrieved documents support an answer at all: grounded refusal.

One rule, used twice: by the offline answerer (``ragcore.chat.extractive``), which
then says the documents do not answer, and by the chat pipeline before the model
(``ragcore.chat.pipeline``), which then says so without asking a provider.

An answer is unsupported when neither the meaning nor the words support it: no
source is surely on the question's topic by its meaning (``RetrievedHit.on_topic``,
for an embedder with a measured floor, ``TOPIC_FLOORS``), and no sentence, read with
its context (its document's name and headings, the sentence before it), covers
``MIN_COVERAGE`` of the question's term weight (``best_coverage``). An unmeasured
embedder (the remote ones) is trusted, as for relevance
(``ragcore.knowledge.retrieval``): nothing is declined by this rule for it.

The words are read for no language in particular (``words``, ``same_word``): they must
work for whatever language the owner's documents are in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import attrs

from ragcore.knowledge.chunking import CODE_FENCE
from ragcore.knowledge.retrieval import RetrievedHit
from ragcore.language import FUNCTION_WORDS
from ragcore.sources import Source

#: The share of the question's term weight one sentence, read with its context, must
#: cover for the words alone to support an answer (see the module's docstring). Chosen
#: with scripts/eval_answers.py (eval/answers/README.md): from 0.6 up, 10 of the 11
#: unanswerable questions are declined and no more answerable ones than at 0.35.
MIN_COVERAGE = 0.6

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
# a code block, as chunking writes one
_FENCE = re.escape(CODE_FENCE)
_CODE = re.compile(rf"^{_FENCE}\n(.*?)\n{_FENCE}$", re.DOTALL | re.MULTILINE)
_STOPWORDS = frozenset().union(*FUNCTION_WORDS.values())  # they match everywhere


def words(text: str) -> list[str]:
    """The content words of ``text``, lower-cased: no function word, no single letter."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1]


def same_word(a: str, b: str) -> bool:
    """Equal, or one a short inflection of the other ("refund"/"refunds", "tage"/"tagen").

    A stemmer for no language in particular: it must work for whatever language the
    owner's documents are in.
    """
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and long.startswith(short) and len(long) - len(short) <= 3


def holds(bag: AbstractSet[str], term: str) -> bool:
    """Whether ``bag`` holds ``term`` or an inflection of it (``same_word``)."""
    return term in bag or any(same_word(term, word) for word in bag)


#: One of the question's words, with what else stands for it (its translations, for a
#: question in another language than the documents': ``ragcore.chat.translation``).
Term = frozenset[str]


def terms_of(question: str) -> tuple[Term, ...]:
    """The question's content words, each its own term."""
    return tuple(frozenset({word}) for word in dict.fromkeys(words(question)))


def holds_term(bag: AbstractSet[str], term: Term) -> bool:
    """Whether ``bag`` holds one of ``term``'s words or an inflection of it."""
    return any(holds(bag, word) for word in term)


@attrs.frozen
class Sentence:
    """A sentence of a source, with what it is read with.

    ``bag``: its content words; ``context``: the content words of its document's name
    and headings and of the sentence before it in its chunk.
    """

    number: int  # the source's number
    position: int  # its place in the source's text
    text: str
    bag: frozenset[str]
    context: frozenset[str]
    code: bool = False  # a code block (its lines kept)


def sentences_of(sources: Sequence[Source]) -> list[Sentence]:
    """The sentences of ``sources``, in source order. Overlapping chunks repeat
    sentences: each is read once, from the first (best ranked) source holding it."""
    sentences = []
    seen = set()
    for source in sources:
        titles = frozenset(words(" ".join((source.hit.document_name, *source.hit.heading_path))))
        before: frozenset[str] = frozenset()
        for position, (text, code) in enumerate(_pieces(source.hit.text)):
            text = text.strip("\n") if code else text.strip()
            bag = frozenset(words(text))
            if text and text not in seen:
                seen.add(text)
                sentences.append(
                    Sentence(source.number, position, text, bag, titles | before, code)
                )
            before = bag
    return sentences


def _pieces(text: str) -> list[tuple[str, bool]]:
    """The sentences of a source's text, each with whether it is a code block: a code
    block is one, its lines kept (a command and its options, a configuration section)."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for block in _CODE.finditer(text):
        pieces.extend((p, False) for p in _SENTENCE_END.split(text[at : block.start()]))
        pieces.append((block.group(1), True))
        at = block.end()
    pieces.extend((p, False) for p in _SENTENCE_END.split(text[at:]))
    return [(piece, code) for piece, code in pieces if piece.strip()]


def supports_answer(
    question: str,
    sources: Sequence[Source],
    language: str | None,
    terms: Sequence[Term] | None = None,
) -> bool:
    """Whether ``sources`` (documents, not live data) support an answer to ``question``
    by their meaning or their words (see the module's docstring). ``language``: the
    question's, when detected (None: not known); ``terms``: its words as read
    (``terms_of`` unless translated)."""
    if not unsupported_by_meaning(sources, language):
        return True
    read = terms_of(question) if terms is None else terms
    return best_coverage(set(read), sentences_of(sources)) >= MIN_COVERAGE


#: a word written as a name: capitals inside it ("WordPress", "iPhone"), parts joined by
#: _ or . ("try_files", "pm.max_children"), or an acronym of three letters or more
#: ("HMRC", "PHP-FPM"'s two). A word's hyphenated parts are read one by one:
#: "two-factor" and German's "IP-Adresse" are words. Not names: a code with digits (an
#: order's "A1234" is a value the documents need not hold to say how orders are
#: tracked), and two capitals ("UK", "XL"), which documents write out more often.
_NAME_FORMS = re.compile(r"[a-z][A-Z]|\w_\w|\w{2}\.\w{2}|^[A-Z]{3,}$")
_EDGES = "\"'`“”‘’«»„()[]{},;:!?¿¡"
#: the longest acronym looked for written out ("USA": "United States of America")
_ACRONYM_LETTERS = 5
#: what may join a name's parts ("Wi-Fi"), and the shortest name looked for with its parts
#: joined (a shorter one would be found inside other words)
_JOINS = re.compile(r"[\s\-_.]+")
_SQUEEZED_LETTERS = 4


def names_of(question: str) -> list[str]:
    """The names ``question`` gives (by their form, ``_NAME_FORMS``), lower-cased."""
    found = []
    shouted = not any(ch.islower() for ch in question)  # then capitals make no acronym
    for token in question.split():
        for part in token.split("-"):
            part = part.strip(_EDGES).removesuffix("'s").rstrip(".")
            if _NAME_FORMS.search(part) and not (shouted and part.isalpha()):
                found.append(part.casefold())
    return list(dict.fromkeys(found))


def unnamed(question: str, sources: Sequence[Source]) -> list[str]:
    """The names ``question`` gives that no source holds (in its text, its document's name
    or its headings; an acronym also written out, "VAT" as "value-added tax"): unless the
    documents mention them elsewhere (the business's own name on its "about" page), the
    sources answer a question about something else ("try_files" is nginx's, the sources
    are Apache's manual). The chat pipeline asks (``FindMentions``)."""
    names = names_of(question)
    if not names:
        return []
    held = " ".join(
        " ".join((s.hit.text, s.hit.document_name, *s.hit.heading_path)) for s in sources
    ).casefold()
    # written apart or joined ("WiFi": "Wi-Fi", "PayPal": "Pay Pal"): found either way
    squeezed = _JOINS.sub("", held)
    return [
        n
        for n in names
        if not re.search(_held_as(n), held)
        and not (len(n) >= _SQUEEZED_LETTERS and _JOINS.sub("", n) in squeezed)
    ]


def _held_as(name: str) -> str:
    """The pattern ``name`` is found by: itself (or its plural), or an acronym's words."""
    found = rf"(?<!\w){re.escape(name)}s?(?!\w)"
    if name.isalpha() and len(name) <= _ACRONYM_LETTERS:
        # each letter a word's first, perhaps with "of", "the", "and" or "for" between
        joint = r"[\s-]+(?:(?:of|the|and|for|&)[\s-]+)?"
        words = joint.join(rf"{letter}\w*" for letter in name)
        found = rf"{found}|(?<!\w){words}"
    return found


def unsupported_by_meaning(sources: Sequence[Source], language: str | None) -> bool:
    """No source is surely on the question's topic by its meaning, as far as the
    embedder's measured floor tells (``TOPIC_FLOORS``); an unmeasured embedder, or a
    question in a language its floor was not measured in (``TOPIC_FLOOR_LANGUAGES``),
    is trusted, as for relevance (``ragcore.knowledge.retrieval``)."""
    measured = [
        s.hit
        for s in sources
        if isinstance(s.hit, RetrievedHit)
        and s.hit.topic_floor is not None
        and (
            language is None
            or not s.hit.topic_floor_languages
            or language in s.hit.topic_floor_languages
        )
    ]
    return bool(measured) and not any(hit.on_topic for hit in measured)


def best_coverage(terms: AbstractSet[Term], sentences: Sequence[Sentence]) -> float:
    """The largest share of the question's term weight one sentence covers, itself or
    through its context. A term is weighed by how few sentences (with their context)
    hold it; one that none holds weighs as the rarest held: it is what the sources do
    not talk about ("the user id of *nobody*"), and an answer without it answers
    something else."""
    if not terms or not sentences:
        return 0.0
    covered = [
        {t for t in terms if holds_term(s.bag, t) or holds_term(s.context, t)} for s in sentences
    ]
    count = len(sentences)
    held = {t: sum(1 for c in covered if t in c) for t in terms}
    weight = {t: math.log(1 + count / max(held[t], 1)) for t in terms}
    total = sum(weight.values())
    return max(sum(weight[t] for t in c) / total for c in covered)
