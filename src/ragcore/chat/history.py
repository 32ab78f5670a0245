"""What is kept of a conversation's turn, and how a conversation is found again.

A turn is recorded with its ``outcome``: ``answered``, ``not_found`` (the documents do
not say), ``limited`` (a token budget) or ``failed``. A client that sends the whole
history with every request (the OpenAI protocol) is found again by ``continuation``:
the hash of the exchanges as the client will send them back next time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ragcore.api.converter import converter
from ragcore.chat.followup import Exchange
from ragcore.chat.pipeline import ChatAnswer
from ragcore.language import not_found


def turn_outcome(answer: ChatAnswer) -> str:
    if answer.limited:
        return "limited"
    said = not_found(answer.language or "en")
    if answer.provider is None and not answer.citations and answer.answer == said:
        return "not_found"
    return "answered"


def continuation(exchanges: Sequence[Exchange]) -> str | None:
    """The key of a conversation whose exchanges are these (None: no exchange yet).
    Whitespace is not significant: clients trim and rewrap the texts they send back."""
    if not exchanges:
        return None
    texts = [[" ".join(e.question.split()), " ".join(e.answer.split())] for e in exchanges]
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode("utf-8")).hexdigest()


def citation_rows(answer: ChatAnswer) -> list[dict[str, object]]:
    """The answer's citations as a turn keeps them: as the answer gave them."""
    return [converter.unstructure(citation) for citation in answer.citations]
