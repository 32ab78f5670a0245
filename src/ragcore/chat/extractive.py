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
    terms = set(words(prompt.question))
    scored: list[tuple[float, int, int, str]] = []  # (score, source number, position, sentence)
    for source in prompt.sources:
        for position, sentence in enumerate(_SENTENCE_END.split(source.hit.text)):
            sentence = sentence.strip()
            sentence_words = words(sentence)
            overlap = terms.intersection(sentence_words)
            if not overlap:
                continue
            score = len(overlap) / math.sqrt(len(sentence_words))
            scored.append((score, source.number, position, sentence))
    if not scored:
        return NOT_FOUND
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    chosen: list[tuple[int, int, str]] = []
    length = 0
    for _, number, position, sentence in scored[:MAX_SENTENCES]:
        if chosen and length + len(sentence) > MAX_ANSWER_CHARS:
            break
        chosen.append((number, position, sentence))
        length += len(sentence)
    chosen.sort()
    return " ".join(f"{sentence} [{number}]" for number, _, sentence in chosen)
