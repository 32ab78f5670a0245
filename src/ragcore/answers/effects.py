"""Effects of the owner's answers in a turn (``ragcore.chat.pipeline``);
``ragio.answers.handlers`` executes them."""

from __future__ import annotations

import attrs

from ragcore.answers.matching import OwnerAnswerMatch
from ragcore.effects import Effect


@attrs.frozen
class FindOwnerAnswer(Effect[OwnerAnswerMatch | None]):
    """The owner's answer whose questions are nearest ``question`` (embedded as
    ``vector``), as in force now: an edit or a deletion counts at once, on every
    replica. Result: ``OwnerAnswerMatch``, None when the owner has answered nothing."""

    runs_ahead = True

    question: str
    vector: tuple[float, ...]
