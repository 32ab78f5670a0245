"""OpenAI and OpenAI-compatible servers (Ollama, vLLM, llama.cpp, OpenRouter…).

Through the official SDK's ``AsyncOpenAI``, which runs natively under Trio.
Every call has the configured timeout; the SDK retries 429 and 5xx itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openai import AsyncOpenAI

from ragcore.effects import Generate, Reply
from ragcore.knowledge.embedding_space import EmbeddingSpace

MAX_BATCH = 2048  # inputs per embeddings request, the API's limit


def make_client(settings: Any) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key=settings.openai_api_key or "unset",
        base_url=settings.openai_base_url or None,
        timeout=settings.provider_timeout_seconds,
        max_retries=2,
    )


class OpenAIAnswerer:
    name = "openai"

    def __init__(self, settings: Any, client: AsyncOpenAI | None = None):
        self.client = client or make_client(settings)
        self.model = settings.openai_chat_model

    async def generate(self, request: Generate) -> Reply:
        completion = await self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": request.prompt.system},
                {"role": "user", "content": request.prompt.user},
            ],
            max_tokens=request.max_output_tokens,
            temperature=request.temperature,
        )
        text = completion.choices[0].message.content or ""
        return Reply(text, provider=self.name, model=completion.model or self.model)


class OpenAIEmbedder:
    name = "openai"

    def __init__(self, settings: Any, client: AsyncOpenAI | None = None):
        self.client = client or make_client(settings)
        self.space = EmbeddingSpace(
            self.name, settings.openai_embedding_model, settings.embedding_dimensions
        )

    async def embed(self, texts: Sequence[str], purpose: str) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            batch = list(texts[start : start + MAX_BATCH])
            response = await self.client.embeddings.create(
                model=self.space.model,
                input=batch,
                dimensions=self.space.dimensions,
                encoding_format="float",
            )
            ordered = sorted(response.data, key=lambda item: item.index)
            vectors.extend(item.embedding for item in ordered)
        return vectors
