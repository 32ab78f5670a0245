"""The offline answerer: no model, it answers with the best cited passages.

It picks the sentences of the sources that share the most words with the
question and returns them, each cited, in source order: a line that introduces
what follows ("run:") with the line it introduces, never a question the sources
themselves ask, and from another document only a sentence that holds one of the
question's words as it is (one answer, not a collage). When no sentence
shares a content word with the question, or the sources do not support an answer
(``ragcore.chat.support``, the rule the pipeline also applies before a model), it
says the documents do not answer.
Live data is quoted first, record by record (``Prompt.live``, what
``ragcore.live.pipeline.offline_live_answer`` says of it): records found are the answer; a
source that could not be reached is said, then the documents are quoted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragcore.chat.answer_kinds import answer_kind, carries
from ragcore.chat.support import (
    Sentence,
    Term,
    holds_term,
    sentences_of,
    supports_answer,
    terms_of,
)
from ragcore.generation import Prompt
from ragcore.language import function_word_language, not_found
from ragcore.sources import Source

MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 900
#: a sentence scoring under this share of the best one is left out
RELATIVE_CUTOFF = 0.5
#: The offline answer's rules, each measured leave-one-corpus-out on the three sets of
#: eval/ (``scripts/eval_loco.py --grid quoting``; eval/answers/README.md).
#: Whether a sentence ending with ":" is quoted with the line it introduces (the command
#: after "To hold a package, run:"): yes; expected facts in the answer +5.7 and +6.0
#: points on two sets, the same on the third, nothing else changed.
QUOTE_INTRODUCED = True
#: Whether a question the sources ask (an FAQ's, a table of contents' line) may be
#: quoted as an answer: no; no set's figures moved either way, and "How do I put a
#: package on hold? [4]" answers nothing.
QUOTE_QUESTIONS = False
#: The share of the question's term weight a further sentence must cover that the
#: sentences before it do not: none; 0.1 to 0.3 lost citations and facts on every set.
MIN_GAIN = 0.0
#: Whether a further sentence from another document than the first sentence's must hold
#: one of the question's words as it is, not only an inflection of it ("How long …?"
#: does not take "New applications should no longer use …" from an unrelated page): yes;
#: no set's figures moved (7 of 184 answers lost a sentence, none that held an expected
#: fact); asking instead for 2 or 3 of the question's words lost facts on two sets.
EXACT_WORD_ELSEWHERE = True
#: How much more a sentence weighs that carries the kind of answer the question asks for
#: (a number for "how long", a path for "which file": ``ragcore.chat.answer_kinds``): twice;
#: on the 44 questions that ask for one, 1.5 and 2 gain facts on two sets (+9.5 and +16.7
#: points at 2) and lose none on the third; 3, which two sets choose, loses a question's
#: citation and facts on the third (``scripts/eval_loco.py --grid kinds``).
KIND_WEIGHT = 2.0


def extractive_answer(prompt: Prompt) -> str:
    documents = [s for s in prompt.sources if s.hit.live_action_id is None]
    asked = function_word_language(prompt.question) or prompt.language
    terms = prompt.terms if prompt.terms is not None else terms_of(prompt.question)
    quoted = _quoted(prompt.question, terms, documents, asked)
    if prompt.live is None:
        return quoted or not_found(prompt.language)
    if prompt.live.found or not quoted:
        return prompt.live.text
    return f"{prompt.live.text} {quoted}"


def _quoted(
    question: str, terms: Sequence[Term], sources: list[Source], language: str
) -> str | None:
    """The best sentences of ``sources`` for ``question`` (read as ``terms``), cited;
    None when none shares a content word with it, or when the sources do not support
    an answer (``ragcore.chat.support``: neither their meaning nor their words)."""
    sentences = sentences_of(sources)
    found = [(s, {t for t in terms if holds_term(s.bag, t)}) for s in sentences]
    # A question word found in every sentence ("days") tells less than a rare one ("return").
    frequency = {t: sum(1 for _, overlap in found if t in overlap) for t in terms}
    weight = {t: math.log(1 + len(sentences) / n) for t, n in frequency.items() if n}
    kind = answer_kind(question)
    scored = []
    for sentence, overlap in found:
        if overlap and (QUOTE_QUESTIONS or not _is_question(sentence.text)):
            score = sum(weight[t] for t in overlap) / math.sqrt(len(sentence.bag))
            if kind is not None and carries(sentence.text, kind, question, sentence.code):
                score *= KIND_WEIGHT
            scored.append((score, sentence, overlap))
    if not scored:
        return None
    if not supports_answer(question, sources, language, terms):
        return None
    scored.sort(key=lambda item: (-item[0], item[1].number, item[1].position))
    best, first, covered = scored[0]
    total = sum(weight.values())
    document_of = {source.number: source.hit.document_name for source in sources}
    chosen = [first]
    length = len(first.text)
    for score, sentence, overlap in scored[1:MAX_SENTENCES]:
        if score < best * RELATIVE_CUTOFF or length + len(sentence.text) > MAX_ANSWER_CHARS:
            break
        # one answer, not a collage: a further sentence says what the others do not
        gain = sum(weight[t] for t in overlap - covered) / total
        if gain < MIN_GAIN:
            continue
        other_document = document_of[sentence.number] != document_of[first.number]
        exact = any(term & sentence.bag for term in overlap)
        if other_document and EXACT_WORD_ELSEWHERE and not exact:
            continue  # "no longer" from another manual does not answer "how long"
        chosen.append(sentence)
        covered |= overlap
        length += len(sentence.text)
    quoted = [(s.number, s.position, s.text) for s in chosen]
    if QUOTE_INTRODUCED:
        quoted = _with_what_they_introduce(chosen, sentences)
    quoted.sort()
    return " ".join(f"{text} [{number}]" for number, _, text in quoted)


#: what ends a sentence that says all it has to say (one that introduces a code block
#: ends with ":" or with nothing: "you can set a package to hold using")
_FINAL = (".", "!", "?", "。", "！", "？")
#: the lines of a code block quoted: a command and the start of what it prints
CODE_LINES = 6


def _shown(sentence: Sentence) -> str:
    """A sentence as quoted: a code block on lines of its own (the first ``CODE_LINES``)."""
    if not sentence.code:
        return sentence.text
    lines = sentence.text.split("\n")
    return "\n" + "\n".join(lines[:CODE_LINES]) + ("\n…" if len(lines) > CODE_LINES else "")


def _is_question(text: str) -> bool:
    """A question the source asks (an FAQ's, a table of contents' entry): what answers
    it follows it, it is no answer itself."""
    return text.rstrip().endswith(("?", "？"))


def _with_what_they_introduce(
    chosen: list[Sentence], sentences: list[Sentence]
) -> list[tuple[int, int, str]]:
    """(source number, position, text) of the chosen sentences, one that introduces
    what follows ("To hold a package, run:") joined with the line it introduces (the
    command itself), quoted as one."""
    following = {(s.number, s.position): s for s in sentences}
    joined = set()
    quoted = []
    for sentence in sorted(chosen, key=lambda s: (s.number, s.position)):
        if (sentence.number, sentence.position) in joined:
            continue
        text = sentence.text
        after = following.get((sentence.number, sentence.position + 1))
        introduces = text.rstrip().endswith(":") or (
            after is not None and after.code and not text.rstrip().endswith(_FINAL)
        )
        if introduces and after is not None:
            text = f"{text}{_shown(after)}" if after.code else f"{text} {after.text}"
            joined.add((after.number, after.position))
        elif sentence.code:
            text = _shown(sentence)
        quoted.append((sentence.number, sentence.position, text))
    return quoted
