"""Effects of answering: asking the answering provider (rule 6 picks which)."""

from __future__ import annotations

import attrs

from ragcore.chat.prompts import Prompt
from ragcore.effects import Effect
from ragcore.usage import TokenUsage


@attrs.frozen
class Reply:
    text: str
    provider: str
    model: str
    #: tokens as the provider reported them; None when it reported none
    usage: TokenUsage | None = None


@attrs.frozen
class Generate(Effect[Reply]):
    """Ask the answering provider. Result: a ``Reply``."""

    prompt: Prompt
    max_output_tokens: int
    temperature: float
    #: what the text is for: ``"answer"`` (a grounded answer), or a task only a language
    #: model can do (``"check"``, ``"summary"``, ``"rewrite"``); the offline extractive
    #: answerer writes answers only, so the provider chain passes it over for the others
    task: str = "answer"
    #: False holds the text back from the user until it is whole (reasoning mode: the
    #: reasoning is never shown, and the final answer is checked before it is)
    stream: bool = True
    #: the role the call is made for (None: the service itself), set by ``metered_generate``:
    #: the providers never see it; the metrics count tokens by it
    role: str | None = None
