"""The offline answerer: runs ragcore's extractive rule; no model, no network."""

from __future__ import annotations

from ragcore.chat.extractive import extractive_answer
from ragcore.generation import Generate, ModelReply
from ragcore.usage import TokenUsage


class ExtractiveAnswerer:
    name = "extractive"
    model = "extractive"
    tasks = ("answer",)  # it quotes sources; it cannot judge an answer or write a summary

    async def generate(self, request: Generate) -> ModelReply:
        text = extractive_answer(request.prompt)
        # No model runs, so no tokens are spent: the ledger records the call at zero.
        return ModelReply(text, provider=self.name, model=self.model, usage=TokenUsage(0, 0))
