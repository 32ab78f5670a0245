"""Handlers of the chat effects (``ragcore.chat.effects``): asking the answering providers,
the primary, then LLM_FALLBACK_PROVIDERS (rule 6, ``ragio.providers.chain``)."""

from __future__ import annotations

from typing import Any

from ragcore.chat.effects import Generate, Reply
from ragio.providers.chain import OnDelta, generate_with_fallback, stream_with_fallback


async def generate(effect: Generate, service: Any) -> Reply:
    timeout = service.settings.provider_timeout_seconds
    return await generate_with_fallback(service.answerer, effect, timeout)


async def stream(effect: Generate, service: Any, on_delta: OnDelta) -> Reply:
    """The reply streamed to ``on_delta``; whole, unless the effect holds it back."""
    if not effect.stream:
        return await generate(effect, service)
    timeout = service.settings.provider_timeout_seconds
    return await stream_with_fallback(service.answerer, effect, timeout, on_delta)


HANDLERS = {Generate: generate}
STREAMING_HANDLERS = {Generate: stream}
