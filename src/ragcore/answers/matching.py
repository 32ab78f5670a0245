"""When a question is the owner's answer's to answer.

The owner's answers (docs/answers.md) are matched on the questions each covers: a new
question's embedding against theirs, by cosine similarity. The nearest one is **served**
(its text is the answer: no model is asked, no token spent) when the similarity reaches
the embedder's ``serve`` threshold, or when the question is one of its questions word
for word (``normalized``), and it is written in the language the answer is due in; it is
**given to the model as its first source** when the similarity reaches only ``source``
(or when it is in another language: a model translates it); below, it plays no part.

The thresholds are measured per embedder, like the retrieval's topic floors: on the
labelled paraphrases of eval/gaps (``scripts/eval_gaps.py``), ``serve`` is the least
similarity at which serving the nearest answer gives the wrong need for at most 2 % of
the tuning questions (a wrong curated answer is worse than none), ``source`` the one
that 95 % of right matches reach. An unmeasured embedder (the remote ones) has none: it
serves an answer only to its own questions word for word, and gives the nearest as a
source whatever its similarity (the model judges it, as it judges unfloored hits).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import attrs

from ragcore.language import LanguageGuess, function_word_language
from ragcore.sources import Hit

#: what a citation of an owner's answer is named
OWNER_ANSWER_NAME = "the owner's answer"


@attrs.frozen
class Thresholds:
    serve: float
    source: float


#: measured with scripts/eval_gaps.py (see the module's docstring)
THRESHOLDS: dict[tuple[str, str], Thresholds] = {
    ("local", "all-MiniLM-L6-v2-onnx-int8"): Thresholds(serve=0.70, source=0.45),
}


def thresholds(provider: str, model: str) -> Thresholds | None:
    """The embedder's measured thresholds; None: unmeasured."""
    return THRESHOLDS.get((provider, model))


#: how sure the detector must be of an answer's language without function words to tell
#: it: owners' answers mix words with commands and names ("Avec a2enmod <module> puis
#: systemctl reload apache2": Esperanto at 0.75)
ANSWER_LANGUAGE_CONFIDENCE = 0.9


def answer_language(text: str, guesses: Sequence[LanguageGuess]) -> str | None:
    """The language an owner's answer is surely written in: its function words', else
    the detector's when very sure; None when not known (it is then served whatever the
    question's language)."""
    told = function_word_language(text)
    if told is not None:
        return told
    sure = [g for g in guesses[:1] if g.confidence >= ANSWER_LANGUAGE_CONFIDENCE]
    return sure[0].code if sure else None


def normalized(question: str) -> str:
    """A question as matched word for word: case, accents' forms, spacing and the
    punctuation around words do not count."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return " ".join(re.findall(r"\w+(?:['’.-]\w+)*", text))


@attrs.frozen
class OwnerAnswerMatch:
    """The owner's answer nearest a question (``ragcore.answers.effects.FindOwnerAnswer``):
    its text as now in force, the question of it that is nearest, how near, whether word
    for word, and the embedder's thresholds (None: unmeasured)."""

    answer_id: int
    version: int
    answer: str
    question: str
    similarity: float
    exact: bool = False
    thresholds: Thresholds | None = None
    language: str | None = None  # the answer's, when known

    @property
    def close(self) -> bool:
        """Close enough to be the answer itself."""
        if self.exact:
            return True
        return self.thresholds is not None and self.similarity >= self.thresholds.serve

    def serves(self, language: str | None) -> bool:
        """The answer itself to a question surely asked in ``language`` (None: not sure):
        close enough, and not surely in another language than the question's. Otherwise
        a model, which can translate it, is given it."""
        return self.close and (None in (self.language, language) or self.language == language)

    def informs(self, language: str | None) -> bool:
        """Not the answer itself, but close enough to be the model's first source."""
        if self.serves(language):
            return False
        return self.close or self.thresholds is None or self.similarity >= self.thresholds.source


def owner_hit(match: OwnerAnswerMatch) -> Hit:
    """The answer as a source (for the prompt, or the citation of an answer served),
    titled "the owner's answer"."""
    return Hit(
        0,
        0,
        OWNER_ANSWER_NAME,
        match.answer,
        match.similarity,
        owner_answer_id=match.answer_id,
    )
