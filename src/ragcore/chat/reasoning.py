"""Reasoning mode (rule 13): a sensitive role's model reasons step by step before it
answers, and only the final answer is returned.

The model is asked (``ragcore.employees.layering.REASONING_INSTRUCTIONS``) to write its
reasoning inside ``<reasoning>`` and the answer inside ``<answer>``. This works with
every provider alike, whatever its own reasoning features. ``final_answer`` keeps the
answer only: the text inside ``<answer>`` when the model used it; otherwise the reply
with every reasoning block removed (``<reasoning>`` or ``<think>``, the tag open-weight
models served through OpenAI-compatible servers write); a block left open, by a reply
cut short, is removed to the end. Reasoning is never shown, even when that leaves
nothing.
"""

from __future__ import annotations

import re

_HIDDEN = ("reasoning", "think", "thinking")

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.IGNORECASE | re.DOTALL)
_CLOSED = re.compile(
    r"<(" + "|".join(_HIDDEN) + r")>.*?</\1>", re.IGNORECASE | re.DOTALL
)
_OPEN = re.compile(r"<(?:" + "|".join(_HIDDEN) + r")>.*\Z", re.IGNORECASE | re.DOTALL)


def final_answer(reply: str) -> str:
    """The final answer in ``reply``, its reasoning removed (see the module)."""
    without_reasoning = _OPEN.sub("", _CLOSED.sub("", reply))
    found = _ANSWER.search(without_reasoning)
    text = found.group(1) if found else without_reasoning
    text = re.sub(r"</?answer>", "", text, flags=re.IGNORECASE)
    return text.strip()
