"""The offline answerer: no model, it answers with the best cited passages.

It picks the sentences of the sources that share the most words with the
question and returns them, each cited, in source order. When no sentence
shares a content word with the question, it says the documents do not answer.
Live data (``Prompt.live``) is quoted first, record by record: records found are the
answer; a source that could not be reached is said, then the documents are quoted.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ragcore.chat.prompts import Prompt
from ragcore.chat.sources import Source
from ragcore.knowledge.retrieval import RetrievedHit
from ragcore.language import not_found
from ragcore.live.pipeline import LiveData, offline_live_answer

MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 900
#: a sentence scoring under this share of the best one is left out
RELATIVE_CUTOFF = 0.5
#: The answer is declined when no source is surely on the question's topic by its
#: meaning (``RetrievedHit.on_topic``, for an embedder with a measured floor) and no
#: sentence, read with its context (its document's name and headings, the sentence
#: before it), covers this share of the question's term weight (``_best_coverage``):
#: neither the meaning nor the words support an answer. Chosen with
#: scripts/eval_answers.py (eval/answers/README.md): from 0.6 up, 10 of the 11
#: unanswerable questions are declined and no more answerable ones than at 0.35.
MIN_COVERAGE = 0.6

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
# Function words of the languages most of our owners write in: they match everywhere.
_STOPWORDS = frozenset(
    """a about an and any are as at be been but by can could did do does for from had has have
    how i if in into is it its me my no not of on or our please so some than that the their
    them then there these they this to tell us was we were what when where which who whom why
    will with would you your
    aber als am an auf aus bei bin bis das dass dem den der des die du ein eine einem einen
    einer eines es für hat habe haben ich ihr im in ist ja kann mein mit nach nicht noch oder
    sie sind so um und uns von vor was wer wie wir wird zu zum zur
    au aux avec ce ces dans de des du elle en est et il je la le les leur mais me mon ne nous
    on ou par pas pour qu que qui sa se ses son sur ta te tu un une vos votre vous
    al como con cual cuando de del el en es esta este la las lo los me mi no para por que se
    su sus un una y yo
    aan al bij dat de den der die dit een en het hoe ik in is je met mijn naar niet of om op
    te van voor wat we wie zijn
    """.split()
)


def words(text: str) -> list[str]:
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


def _in(term: str, bag: set[str]) -> bool:
    return term in bag or any(same_word(term, word) for word in bag)


def extractive_answer(prompt: Prompt) -> str:
    documents = [s for s in prompt.sources if s.hit.live_action_id is None]
    quoted = _quoted(prompt.question, documents)
    live = [s for s in prompt.sources if s.hit.live_action_id is not None]
    if prompt.live is None or not live:
        return quoted or not_found(prompt.language)
    said = offline_live_answer(prompt.live, live[0].number, prompt.language)
    if isinstance(prompt.live, LiveData) or not quoted:
        return said
    return f"{said} {quoted}"


def _quoted(question: str, sources: list[Source]) -> str | None:
    """The best sentences of ``sources`` for ``question``, cited; None when none shares
    a content word with it, or when none supports an answer (``MIN_COVERAGE``)."""
    sentences = []
    seen = set()  # overlapping chunks repeat sentences: quote each once, from the best source
    for source in sources:
        titles = set(words(" ".join((source.hit.document_name, *source.hit.heading_path))))
        before: set[str] = set()
        for position, sentence in enumerate(_SENTENCE_END.split(source.hit.text)):
            sentence = sentence.strip()
            bag = set(words(sentence))
            if sentence and sentence not in seen:
                seen.add(sentence)
                context = titles | before
                sentences.append((source.number, position, sentence, bag, context))
            before = bag
    terms = set(words(question))
    found = [
        (number, position, sentence, bag, {t for t in terms if _in(t, bag)}, context)
        for number, position, sentence, bag, context in sentences
    ]
    # A question word found in every sentence ("days") tells less than a rare one ("return").
    frequency = {t: sum(1 for *_, overlap, _ in found if t in overlap) for t in terms}
    weight = {t: math.log(1 + len(sentences) / n) for t, n in frequency.items() if n}
    scored = []
    for number, position, sentence, bag, overlap, _ in found:
        if overlap:
            score = sum(weight[t] for t in overlap) / math.sqrt(len(bag))
            scored.append((score, number, position, sentence))
    if not scored:
        return None
    if _unsupported(sources) and _best_coverage(terms, found) < MIN_COVERAGE:
        return None
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    best = scored[0][0]
    chosen: list[tuple[int, int, str]] = []
    length = 0
    for score, number, position, sentence in scored[:MAX_SENTENCES]:
        if score < best * RELATIVE_CUTOFF or (chosen and length + len(sentence) > MAX_ANSWER_CHARS):
            break
        chosen.append((number, position, sentence))
        length += len(sentence)
    chosen.sort()
    return " ".join(f"{sentence} [{number}]" for number, _, sentence in chosen)


def _unsupported(sources: list[Source]) -> bool:
    """No source is surely on the question's topic by its meaning, as far as the
    embedder's measured floor tells (``TOPIC_FLOORS``); an unmeasured embedder is
    trusted, as for relevance (``ragcore.knowledge.retrieval``)."""
    measured = [
        s.hit for s in sources if isinstance(s.hit, RetrievedHit) and s.hit.topic_floor is not None
    ]
    return bool(measured) and not any(hit.on_topic for hit in measured)


def _best_coverage(terms: set[str], found: list[Any]) -> float:
    """The largest share of the question's term weight one sentence covers, itself or
    through its context. A term is weighed by how few sentences (with their context)
    hold it; one that none holds weighs as the rarest held: it is what the sources do
    not talk about ("the user id of *nobody*"), and an answer without it answers
    something else."""
    if not terms or not found:
        return 0.0
    count = len(found)
    held = {t: sum(1 for *_, o, c in found if t in o or _in(t, c)) for t in terms}
    weight = {t: math.log(1 + count / max(held[t], 1)) for t in terms}
    total = sum(weight.values())
    return max(
        sum(weight[t] for t in terms if t in overlap or _in(t, context)) / total
        for *_, overlap, context in found
    )
