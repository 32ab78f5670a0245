"""The offline answerer: no model, it answers with the best cited passages.

It picks the sentences of the sources that share the most words with the
question and returns them, each cited, in source order. When no sentence
shares a content word with the question, it says the documents do not answer.
"""

from __future__ import annotations

import math
import re

from ragcore.chat.prompts import Prompt

NOT_FOUND = "The available documents do not answer this question."
MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 900
#: a sentence scoring under this share of the best one is left out
RELATIVE_CUTOFF = 0.5

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "tell",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "about",
        "any",
        "some",
    )
)


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1]


def extractive_answer(prompt: Prompt) -> str:
    sentences = [
        (source.number, position, sentence.strip(), set(words(sentence)))
        for source in prompt.sources
        for position, sentence in enumerate(_SENTENCE_END.split(source.hit.text))
        if sentence.strip()
    ]
    terms = set(words(prompt.question))
    # A question word found in every sentence ("days") tells less than a rare one ("return").
    frequency = {t: sum(1 for *_, bag in sentences if t in bag) for t in terms}
    weight = {t: math.log(1 + len(sentences) / n) for t, n in frequency.items() if n}
    scored = []
    for number, position, sentence, bag in sentences:
        overlap = terms & bag
        if overlap:
            score = sum(weight[t] for t in overlap) / math.sqrt(len(bag))
            scored.append((score, number, position, sentence))
    if not scored:
        return NOT_FOUND
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
