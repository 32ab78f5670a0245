"""The offline answerer: no model, it answers with the best cited passages.

It picks the sentences of the sources that share the most words with the
question and returns them, each cited, in source order. When no sentence
shares a content word with the question, or the sources do not support an answer
(``ragcore.chat.support``, the rule the pipeline also applies before a model), it
says the documents do not answer.
Live data is quoted first, record by record (``Prompt.live``, what
``ragcore.live.pipeline.offline_live_answer`` says of it): records found are the answer; a
source that could not be reached is said, then the documents are quoted.
"""

from __future__ import annotations

import math

from ragcore.chat.support import holds, sentences_of, supports_answer, words
from ragcore.generation import Prompt
from ragcore.language import function_word_language, not_found
from ragcore.sources import Source

MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 900
#: a sentence scoring under this share of the best one is left out
RELATIVE_CUTOFF = 0.5


def extractive_answer(prompt: Prompt) -> str:
    documents = [s for s in prompt.sources if s.hit.live_action_id is None]
    asked = function_word_language(prompt.question) or prompt.language
    quoted = _quoted(prompt.question, documents, asked)
    if prompt.live is None:
        return quoted or not_found(prompt.language)
    if prompt.live.found or not quoted:
        return prompt.live.text
    return f"{prompt.live.text} {quoted}"


def _quoted(question: str, sources: list[Source], language: str) -> str | None:
    """The best sentences of ``sources`` for ``question``, cited; None when none shares
    a content word with it, or when the sources do not support an answer
    (``ragcore.chat.support``: neither their meaning nor their words)."""
    sentences = sentences_of(sources)
    terms = set(words(question))
    found = [(s, {t for t in terms if holds(s.bag, t)}) for s in sentences]
    # A question word found in every sentence ("days") tells less than a rare one ("return").
    frequency = {t: sum(1 for _, overlap in found if t in overlap) for t in terms}
    weight = {t: math.log(1 + len(sentences) / n) for t, n in frequency.items() if n}
    scored = []
    for sentence, overlap in found:
        if overlap:
            score = sum(weight[t] for t in overlap) / math.sqrt(len(sentence.bag))
            scored.append((score, sentence.number, sentence.position, sentence.text))
    if not scored:
        return None
    if not supports_answer(question, sources, language):
        return None
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    best = scored[0][0]
    chosen: list[tuple[int, int, str]] = []
    length = 0
    for score, number, position, text in scored[:MAX_SENTENCES]:
        if score < best * RELATIVE_CUTOFF or (chosen and length + len(text) > MAX_ANSWER_CHARS):
            break
        chosen.append((number, position, text))
        length += len(text)
    chosen.sort()
    return " ".join(f"{text} [{number}]" for number, _, text in chosen)
