"""A conversation turn's stage timings, as the owner reads them beside ``answer_ms`` (the
``timings`` of ``GET /conversations/{id}``; on a call, the ``stages`` of ``GET
/voice/calls`` too), the same on every channel.

The runner times each effect a turn's pipeline asks for and adds its time to the stage
its kind belongs to (``ragio.timings``, which holds that table); what the stages are and
how their times are written down is here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: a turn's stages, in the order a turn reaches them, and what each one's milliseconds
#: were spent on; a stage is in a turn's timings when the turn reached it
STAGES: dict[str, str] = {
    "language_ms": (
        "detecting the question's language and translating its words (none when its own "
        "function words told its language, as they do for most questions in English, "
        "German, French, Spanish, Italian, Portuguese and Dutch)"
    ),
    "live_ms": (
        "live data: the owner's live-data actions looked up for the question, and the "
        "queries run on their data sources"
    ),
    "embedding_ms": "embedding the question",
    "search_ms": "searching the documents, the owner's answers and the role's memory",
    "graph_ms": "reaching into the knowledge graph",
    "model_ms": (
        "the answering providers' calls, every attempt and fallback included (a "
        "follow-up's rewrite and the grounding check too)"
    ),
    "action_ms": "an action the answer proposed: gated, sent or put to the owner",
    "reply_ms": "sending the reply on a text channel (Telegram, WhatsApp, Discord)",
}
#: the time to the model's first streamed text, beside the stages
FIRST_TEXT = "first_token_ms"
FIRST_TEXT_MEANS = "from the turn's start to the model's first text, when it was streamed"


def stage_timings(spent: Mapping[str, float], first_text: float | None = None) -> dict[str, int]:
    """A turn's stage timings: each stage it reached (``spent``: its seconds, summed over
    its steps) in whole milliseconds, rounded down (once read to the microsecond) so that
    the stages never add up to more than the time they took; and ``first_token_ms`` when
    the answer was streamed (``first_text``: the seconds from the turn's start to the
    model's first text). ValueError for a stage that is not one of ``STAGES`` (a mistake
    of ours)."""
    unknown = sorted(set(spent) - set(STAGES))
    if unknown:
        raise ValueError(f"not a stage of a turn: {', '.join(unknown)}")
    timings = {stage: _whole_ms(spent[stage]) for stage in STAGES if stage in spent}
    if first_text is not None:
        timings[FIRST_TEXT] = _whole_ms(first_text)
    return timings


def described_stages() -> str:
    """The stages and ``first_token_ms``, named with their meaning (for the API's schema)."""
    named = [f"{stage} ({means})" for stage, means in STAGES.items()]
    return "; ".join([*named, f"{FIRST_TEXT} ({FIRST_TEXT_MEANS})"])


def _whole_ms(seconds: float) -> int:
    """Rounded down, once read to the microsecond: 0.7 s - 0.4 s is 300 ms, not 299."""
    return max(0, math.floor(round(seconds * 1000, 3)))
