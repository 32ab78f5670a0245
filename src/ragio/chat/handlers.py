"""Handlers of the chat pipeline's own effects: asking the answering providers, the
primary, then LLM_FALLBACK_PROVIDERS (rule 6, ``ragio.providers.chain``), detecting
the language of a question (``ragcore.language``) and translating its words
(``ragio.chat.dictionaries``)."""

from __future__ import annotations

from ragcore.chat.history import LoadConversation, Ongoing, RecordedTurn, RecordTurn
from ragcore.chat.translation import TranslateWords
from ragcore.generation import Generate, ModelReply
from ragcore.language import DetectLanguage, LanguageGuess
from ragio import timings
from ragio.chat import conversations
from ragio.chat.dictionaries import translate_words
from ragio.metrics import OWNER_ANSWERS
from ragio.providers.chain import OnDelta, generate_with_fallback, stream_with_fallback
from ragio.service import HandlerTable, Service, StreamHandlerTable


async def generate(effect: Generate, service: Service) -> ModelReply:
    timeout = service.settings.provider_timeout_seconds
    return await generate_with_fallback(service.answerer, effect, timeout)


async def stream(effect: Generate, service: Service, on_delta: OnDelta) -> ModelReply:
    """The reply streamed to ``on_delta``; whole, unless the effect holds it back."""
    if not effect.stream:
        return await generate(effect, service)
    timeout = service.settings.provider_timeout_seconds
    return await stream_with_fallback(service.answerer, effect, timeout, on_delta)


async def detect_language(effect: DetectLanguage, service: Service) -> list[LanguageGuess]:
    return await service.language.detect(effect.text)


async def load_conversation(effect: LoadConversation, service: Service) -> Ongoing:
    now = service.clock.now()
    if effect.conversation_id is None and effect.key is None:
        return Ongoing(None, (), now)
    found = await service.database.run(  # an unknown conversation_id is a 404 problem
        conversations.ongoing,
        effect.channel,
        effect.key,
        effect.idle_minutes,
        now,
        effect.conversation_id,
        effect.api_key_id,
    )
    return Ongoing(
        found.conversation_id,
        found.history,
        now,
        found.mode,
        found.refusals,
        found.last_message_at,
    )


async def record_turn(effect: RecordTurn, service: Service) -> RecordedTurn:
    """The turn recorded with its stage timings: the time its run's effects took so far
    (``ragio.timings``)."""
    recorded = await service.database.run(
        conversations.record_turn,
        effect.record,
        service.clock.now(),
        service.settings.conversation_retention_days,
        timings.collected(),
    )
    record = effect.record
    if any(c.get("owner_answer_id") is not None for c in record.citations):
        how = "served" if record.provider is None else "cited"
        OWNER_ANSWERS.labels(record.channel, how).inc()
    return recorded


HANDLERS: HandlerTable = {
    Generate: generate,
    DetectLanguage: detect_language,
    LoadConversation: load_conversation,
    RecordTurn: record_turn,
    TranslateWords: translate_words,
}
STREAMING_HANDLERS: StreamHandlerTable = {Generate: stream}
