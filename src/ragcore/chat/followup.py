"""Follow-up questions: "and for shoes?" after "how long do I have to return shirts?".

Retrieval needs a question that stands alone: the follow-up's own words find nothing
about returns. With the conversation so far (``Exchange``), a follow-up is rewritten
into a standalone question for the search, by the model when one is configured
(``rewrite_prompt``, ``read_rewrite``) and by a rule offline (``standalone_by_rule``:
the previous question's words joined to the follow-up's, which is what the search and
the offline answerer need). A question that already stands alone is searched as asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from ragcore.generation import Prompt

#: the exchanges a rewrite (and the answer's prompt) sees: the latest ones
HISTORY_TURNS = 3
#: a question of at most this many words cannot stand alone ("for shoes?", "how much?")
FOLLOW_UP_WORDS = 3
REWRITE_OUTPUT_TOKENS = 120
REWRITE_TEMPERATURE = 0.0
MAX_REWRITE_CHARS = 600

_WORD = re.compile(r"\w+", re.UNICODE)

#: words that point back to the conversation: a question holding one does not stand
#: alone whatever its length ("does it come in blue?", "und wie lange dauert das?")
_POINTING = frozenset(
    """it its they them their those these that this there he she his her also too else
    es ihn ihm dies diese dieser dort auch
    elle ils elles leur cela ça celui celle aussi
    él ella ellos ellas eso esto ese esa también
    daar ook""".split()
)
#: how a follow-up may begin: "and …", "what about …", "und …", "et …", "y …", "en …"
_OPENERS = re.compile(
    r"^[\s¿¡\"'«]*(and|but|or|what about|how about|what if|und|aber|oder|et|mais|ou|y|pero|maar)\b",
    re.IGNORECASE,
)


@attrs.frozen
class Exchange:
    """One earlier turn of the conversation: what was asked and what was answered;
    ``search_question`` is the standalone form it was searched as, when rewritten."""

    question: str
    answer: str
    search_question: str | None = None

    @property
    def standalone(self) -> str:
        return self.search_question or self.question


def is_follow_up(question: str, history: Sequence[Exchange]) -> bool:
    """Whether ``question`` leans on the conversation: there is one, and the question
    begins as a follow-up does, points back at it, or is too short to stand alone."""
    if not history:
        return False
    words = _WORD.findall(question.lower())
    if _OPENERS.match(question) or any(w in _POINTING for w in words):
        return True
    return len(words) <= FOLLOW_UP_WORDS


def standalone_by_rule(question: str, history: Sequence[Exchange]) -> str:
    """The follow-up joined to the previous question (as that one was searched): the
    offline rewrite. A question that stands alone is returned as asked."""
    if not is_follow_up(question, history):
        return question
    return f"{history[-1].standalone} {question}"


def rewrite_prompt(question: str, history: Sequence[Exchange], language: str) -> Prompt:
    """The model's task: the last question rewritten to stand alone, nothing else."""
    system = (
        "You rewrite the last question of a conversation so that it can be understood "
        "without the conversation: replace words that point back (it, that, and for …) "
        "with what they mean. Keep its language and meaning; do not answer it. ModelReply "
        "with the rewritten question only."
    )
    lines = []
    for exchange in history[-HISTORY_TURNS:]:
        lines.append(f"Customer: {exchange.question}")
        lines.append(f"Assistant: {_clip(exchange.answer, 400)}")
    user = "Conversation:\n" + "\n".join(lines) + f"\n\nLast question: {question}"
    return Prompt(system, user, question, (), language)


def read_rewrite(text: str, question: str) -> str:
    """The model's rewrite, one line, unquoted; the question as asked when the reply is
    empty or far too long to be a question."""
    line = " ".join(text.split()).strip().strip("\"'“”«»").strip()
    for prefix in ("Rewritten question:", "Question:", "Standalone question:"):
        if line.lower().startswith(prefix.lower()):
            line = line[len(prefix) :].strip()
    if not line or len(line) > MAX_REWRITE_CHARS:
        return question
    return line


def history_block(history: Sequence[Exchange]) -> str:
    """The conversation so far, for the answer's prompt (the latest exchanges)."""
    lines = ["Conversation so far (for context; answer the question below):"]
    for exchange in history[-HISTORY_TURNS:]:
        lines.append(f"Customer: {exchange.question}")
        lines.append(f"Assistant: {_clip(exchange.answer, 400)}")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
