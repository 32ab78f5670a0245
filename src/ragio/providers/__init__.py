"""Embedding and answering providers, chosen from the settings.

The answering side is a chain (rule 6): the primary provider, then each of
LLM_FALLBACK_PROVIDERS, built once at start-up. ``ragio.runner`` decides how
the chain is tried; here we only build the providers and close them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from ragcore.chat.fallback import answering_order
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.embedding_space import EmbeddingSpace
from ragcore.settings import Settings, answering_provider, embedding_provider
from ragcore.usage import TokenUsage

log = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str
    space: EmbeddingSpace

    async def embed(self, texts: Any, purpose: str) -> list[list[float]]: ...

    async def aclose(self) -> None: ...


class Answerer(Protocol):
    name: str
    model: str

    async def generate(self, request: Generate) -> ModelReply: ...

    def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]: ...

    async def aclose(self) -> None: ...


class ProviderUnavailable(RuntimeError):
    """The settings name a provider this version cannot run, or one without its key."""


@attrs.frozen
class AnswererChain:
    """The answering providers in the order rule 6 tries them; the first is the primary.

    ``name`` and ``model`` are the primary's, for /health and logs.
    """

    answerers: tuple[Answerer, ...]

    def __attrs_post_init__(self) -> None:
        if not self.answerers:
            raise ValueError("an answerer chain needs at least one answerer")

    @property
    def primary(self) -> Answerer:
        return self.answerers[0]

    @property
    def name(self) -> str:
        return self.primary.name

    @property
    def model(self) -> str:
        return self.primary.model

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(answerer.name for answerer in self.answerers)

    def __iter__(self) -> Iterator[Answerer]:
        return iter(self.answerers)

    def __len__(self) -> int:
        return len(self.answerers)

    async def aclose(self) -> None:
        await aclose_all(*self.answerers)


def build_embedder(settings: Settings, name: str | None = None) -> Embedder:
    """The embedder ``name`` (default: the one the settings prefer, ``embedding_provider``;
    start-up passes the one ``choose_embedder`` picks for the stored chunks)."""
    name = name or embedding_provider(settings)
    if name == "local":
        from ragio.providers.local import LocalEmbedder

        return LocalEmbedder(  # type: ignore[return-value]  # it has nothing to close
            cache_dir=Path(settings.data_dir) / "models"
        )
    if name == "openai":
        _require_openai(settings, "EMBEDDING_PROVIDER")
        from ragio.providers.openai import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    if name == "genai":
        _require_key(settings, "genai", "GENAI_API_KEY", "EMBEDDING_PROVIDER")
        from ragio.providers.genai import GenaiEmbedder

        return GenaiEmbedder(settings)
    raise ProviderUnavailable(f"EMBEDDING_PROVIDER: {name!r} is not available in this version")


def build_answerer(
    settings: Settings, name: str | None = None, setting: str = "LLM_PROVIDER"
) -> Answerer:
    """The answering provider ``name`` (default: the primary one); ``setting`` names where it
    was chosen, for errors. To answer with fallback, use ``build_answerers``."""
    name = name or answering_provider(settings)
    if name == "extractive":
        from ragio.providers.extractive import ExtractiveAnswerer

        return ExtractiveAnswerer()  # type: ignore[return-value]
    if name == "openai":
        _require_openai(settings, setting)
        from ragio.providers.openai import OpenAIAnswerer

        return OpenAIAnswerer(settings)
    if name == "genai":
        _require_key(settings, name, "GENAI_API_KEY", setting)
        from ragio.providers.genai import GenaiAnswerer

        return GenaiAnswerer(settings)
    if name == "anthropic":
        _require_key(settings, name, "ANTHROPIC_API_KEY", setting)
        from ragio.providers.anthropic import AnthropicAnswerer

        return AnthropicAnswerer(settings)
    raise ProviderUnavailable(f"{setting}: {name!r} is not available in this version")


def build_answerers(settings: Settings) -> AnswererChain:
    """The primary answering provider, then LLM_FALLBACK_PROVIDERS in order, each once."""
    # A provider that fails to build (a missing key) fails start-up; the ones built before
    # it have opened no connection yet, so there is nothing to close.
    return AnswererChain(
        tuple(
            build_answerer(settings, name, "LLM_PROVIDER" if i == 0 else "LLM_FALLBACK_PROVIDERS")
            for i, name in enumerate(answering_order(settings))
        )
    )


async def aclose_all(*providers: Any) -> None:
    """Close every provider that holds connections, even when one of them fails to close."""
    for provider in providers:
        aclose = getattr(provider, "aclose", None)
        if aclose is None:
            continue
        with trio.CancelScope(shield=True):
            try:
                await aclose()
            except Exception:
                log.warning("closing the %s provider failed", provider.name, exc_info=True)


def _require_key(settings: Settings, name: str, key: str, setting: str) -> None:
    if not getattr(settings, key.lower()):
        raise ProviderUnavailable(
            f"{setting} selects {name}, but {key} is not set: set it, or choose another provider"
        )


def _require_openai(settings: Settings, setting: str) -> None:
    """OpenAI itself needs a key; a compatible server at OPENAI_BASE_URL (Ollama…) may not."""
    if not settings.openai_api_key and not settings.openai_base_url:
        raise ProviderUnavailable(
            f"{setting} selects openai, but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: "
            "set the key (or the URL of a compatible server), or choose another provider"
        )
