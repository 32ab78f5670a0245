"""Embedding and answering providers, chosen from the settings."""

from __future__ import annotations

from typing import Any, Protocol

from ragcore.effects import Generate, Reply
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.settings import answering_provider, embedding_provider


class Embedder(Protocol):
    name: str
    space: EmbeddingSpace

    async def embed(self, texts: Any, purpose: str) -> list[list[float]]: ...


class Answerer(Protocol):
    name: str
    model: str

    async def generate(self, request: Generate) -> Reply: ...


class ProviderUnavailable(RuntimeError):
    """The settings name a provider this version cannot run."""


def build_embedder(settings: Any) -> Embedder:
    name = embedding_provider(settings)
    if name == "local":
        from ragio.providers.local import LocalEmbedder

        return LocalEmbedder()
    if name == "openai":
        from ragio.providers.openai import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    raise ProviderUnavailable(f"EMBEDDING_PROVIDER: {name!r} is not available in this version")


def build_answerer(settings: Any) -> Answerer:
    name = answering_provider(settings)
    if name == "extractive":
        from ragio.providers.extractive import ExtractiveAnswerer

        return ExtractiveAnswerer()
    if name == "openai":
        from ragio.providers.openai import OpenAIAnswerer

        return OpenAIAnswerer(settings)
    raise ProviderUnavailable(f"LLM_PROVIDER: {name!r} is not available in this version")
