"""Handlers of the chat pipeline's own effects: asking the answering providers, the
primary, then LLM_FALLBACK_PROVIDERS (rule 6, ``ragio.providers.chain``), and detecting
the language of a question (``ragcore.language``)."""

from __future__ import annotations

from ragcore.chat.effects import Generate, Reply
from ragcore.language import DetectLanguage, LanguageGuess
from ragio.providers.chain import OnDelta, generate_with_fallback, stream_with_fallback
from ragio.service import HandlerTable, Service, StreamHandlerTable


async def generate(effect: Generate, service: Service) -> Reply:
    timeout = service.settings.provider_timeout_seconds
    return await generate_with_fallback(service.answerer, effect, timeout)


async def stream(effect: Generate, service: Service, on_delta: OnDelta) -> Reply:
    """The reply streamed to ``on_delta``; whole, unless the effect holds it back."""
    if not effect.stream:
        return await generate(effect, service)
    timeout = service.settings.provider_timeout_seconds
    return await stream_with_fallback(service.answerer, effect, timeout, on_delta)


async def detect_language(effect: DetectLanguage, service: Service) -> list[LanguageGuess]:
    return await service.language.detect(effect.text)


HANDLERS: HandlerTable = {Generate: generate, DetectLanguage: detect_language}
STREAMING_HANDLERS: StreamHandlerTable = {Generate: stream}
