"""The offline answerer: runs ragcore's extractive rule; no model, no network."""

from __future__ import annotations

from ragcore.chat.extractive import extractive_answer
from ragcore.effects import Generate, Reply


class ExtractiveAnswerer:
    name = "extractive"
    model = "extractive"

    async def generate(self, request: Generate) -> Reply:
        return Reply(extractive_answer(request.prompt), provider=self.name, model=self.model)
