"""The Gemini provider through the real ``google-genai`` SDK, on an injected httpx client under
Trio, against a fake Gemini API on 127.0.0.1."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import pytest
import trio
from google.genai import errors

from ragcore.usage import TokenUsage
from ragio.providers.batching import MAX_IN_FLIGHT as MAX_CONCURRENT_BATCHES
from ragio.providers.batching import EmbeddingDimensionsMismatch
from ragio.providers.genai import MAX_BATCH, GenaiAnswerer, GenaiEmbedder
from tests.conftest import make_settings
from tests.io.conftest import HASTY, REQUEST, embed, generate, stream
from tests.io.fakes.gemini_server import FakeGemini
from tests.io.fakes.openai_server import bag_of_words

P = TypeVar("P", GenaiAnswerer, GenaiEmbedder)
DIMENSIONS = 64
GENERATE = "generateContent"
STREAM = "streamGenerateContent"
EMBED = "batchEmbedContents"


@pytest.fixture
async def fake(serve_fake) -> FakeGemini:
    return await serve_fake(FakeGemini(api_key="gemini-test-key", reply="Refunds take 5 days [1]."))


@pytest.fixture
def make(fake: FakeGemini, closing) -> Callable[..., Any]:
    """``make(GenaiAnswerer, **settings)``: a provider on the fake, closed after the test.
    Settings default to the fake's key and 64 dimensions."""

    def build(kind: type[P], max_retries: int | None = None, **overrides: Any) -> P:
        defaults = {"genai_api_key": fake.api_key, "embedding_dimensions": DIMENSIONS}
        settings = make_settings(**{**defaults, **overrides})
        retries = {} if max_retries is None else {"max_retries": max_retries}
        return closing(kind(settings, base_url=fake.base_url, **retries))

    return build


async def test_generate_returns_the_text_model_and_usage_and_sends_the_prompt(fake, make):
    fake.model_version = "gemini-2.5-flash-001"

    reply = await make(GenaiAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    assert reply.provider == "genai"
    assert reply.model == "gemini-2.5-flash-001"
    assert reply.usage == TokenUsage(prompt_tokens=16, completion_tokens=5)
    [sent] = fake.requests_to(GENERATE)
    assert sent.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert sent.headers["x-goog-api-key"] == "gemini-test-key"
    assert sent.body["contents"] == [{"parts": [{"text": REQUEST.prompt.user}], "role": "user"}]
    assert sent.body["systemInstruction"]["parts"] == [{"text": REQUEST.prompt.system}]
    assert sent.body["generationConfig"] == {"maxOutputTokens": 200, "temperature": 0.2}


async def test_stream_yields_the_text_deltas_in_order_then_the_reported_usage(fake, make):
    items = [item async for item in make(GenaiAnswerer).stream(REQUEST)]

    assert items[:-1] == ["Refunds ", "take ", "5 ", "days ", "[1]."]
    assert items[-1] == TokenUsage(prompt_tokens=16, completion_tokens=5)  # the last chunk's
    [sent] = fake.requests_to(STREAM)  # the fake streams only when asked with alt=sse
    assert sent.body["generationConfig"]["maxOutputTokens"] == 200


async def test_thinking_tokens_count_as_output_whole_or_streamed(fake, make):
    fake.thoughts_tokens = 40  # billed as output, though the thoughts are not returned
    answerer = make(GenaiAnswerer)

    reply = await answerer.generate(REQUEST)
    items = [item async for item in answerer.stream(REQUEST)]

    assert reply.usage == TokenUsage(prompt_tokens=16, completion_tokens=45)
    assert items[-1] == reply.usage


async def test_embed_returns_one_vector_per_text_in_order_at_the_configured_size(fake, make):
    texts = ["refunds within 30 days", "shipping to the EU", "opening hours"]

    vectors = await make(GenaiEmbedder).embed(texts, "document")

    assert len(vectors) == len(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(bag_of_words(text, DIMENSIONS))
    [sent] = fake.requests_to(EMBED)
    assert sent.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert [r["content"]["parts"][0]["text"] for r in sent.body["requests"]] == texts
    assert {r["taskType"] for r in sent.body["requests"]} == {"RETRIEVAL_DOCUMENT"}
    assert {r["outputDimensionality"] for r in sent.body["requests"]} == {DIMENSIONS}


async def test_a_query_is_embedded_as_a_retrieval_query(fake, make):
    await make(GenaiEmbedder).embed(["how long do refunds take?"], "query")

    [sent] = fake.requests_to(EMBED)
    assert sent.body["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


async def test_embed_splits_texts_into_batches_of_the_apis_limit_and_keeps_their_order(fake, make):
    texts = [f"passage number {n}" for n in range(2 * MAX_BATCH + 1)]

    vectors = await make(GenaiEmbedder).embed(texts, "document")

    sizes = sorted(len(r.body["requests"]) for r in fake.requests_to(EMBED))
    assert sizes == [1, MAX_BATCH, MAX_BATCH]
    assert len(vectors) == len(texts)
    for index in (0, MAX_BATCH - 1, MAX_BATCH, 2 * MAX_BATCH):
        assert vectors[index] == pytest.approx(bag_of_words(texts[index], DIMENSIONS))


async def test_embed_keeps_a_bounded_number_of_batches_in_flight(fake, make):
    batches = 3 * MAX_CONCURRENT_BATCHES
    texts = [f"passage number {n}" for n in range(batches * MAX_BATCH)]
    # The first wave is held until it is all in flight: sent one by one it would never be.
    fake.hold_first(MAX_CONCURRENT_BATCHES)

    with trio.fail_after(30):
        vectors = await make(GenaiEmbedder).embed(texts, "document")

    assert len(vectors) == len(texts)
    assert len(fake.requests_to(EMBED)) == batches
    assert fake.peak == MAX_CONCURRENT_BATCHES


async def test_embed_refuses_vectors_of_another_size_naming_the_setting(fake, make):
    fake.honour_dimensions = False

    with pytest.raises(EmbeddingDimensionsMismatch) as refused:
        await make(GenaiEmbedder).embed(["refunds"], "query")

    assert "EMBEDDING_DIMENSIONS is 64" in str(refused.value)
    assert "EMBEDDING_DIMENSIONS=3072" in str(refused.value)


async def test_embedding_nothing_sends_nothing(fake, make):
    assert await make(GenaiEmbedder).embed([], "document") == []
    assert fake.requests == []


async def test_a_rate_limit_is_retried_after_the_delay_the_api_asks_for(fake, make):
    # Gemini names the wait in a google.rpc.RetryInfo detail rather than a header.
    fake.fail_next(429, retry_delay="0.6s")

    vectors = await make(GenaiEmbedder).embed(["refunds"], "query")

    assert len(vectors) == 1
    limited, retried = fake.requests_to(EMBED)
    assert retried.at - limited.at >= 0.6


async def test_a_retry_after_header_is_honoured_too(fake, make):
    fake.fail_next(503, retry_after="0.6")

    reply = await make(GenaiAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    failed, retried = fake.requests_to(GENERATE)
    assert retried.at - failed.at >= 0.6


async def test_a_retry_after_date_is_counted_from_the_responses_date(fake, make):
    # the wait is the date less the response's Date header: the server's clock, not ours
    fake.fail_next(503, retry_after=email.utils.formatdate(time.time() + 2, usegmt=True))

    reply = await make(GenaiAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    failed, retried = fake.requests_to(GENERATE)
    assert retried.at - failed.at >= 1.0


async def test_server_errors_are_retried_until_one_succeeds(fake, make):
    fake.fail_next(500, retry_delay="0.01s", times=2)

    reply = await make(GenaiAnswerer, max_retries=2).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    assert len(fake.requests_to(GENERATE)) == 3


async def test_a_rate_limit_that_outlasts_the_retries_raises_the_apis_error(fake, make):
    fake.fail_next(429, retry_delay="0.01s", times=3)

    with pytest.raises(errors.ClientError) as limited:
        await make(GenaiAnswerer, max_retries=2).generate(REQUEST)

    assert limited.value.code == 429
    assert limited.value.status == "RESOURCE_EXHAUSTED"
    assert len(fake.requests_to(GENERATE)) == 3


async def test_a_wrong_key_is_refused_without_retrying(fake, make):
    answerer = make(GenaiAnswerer, genai_api_key="wrong-key")

    with pytest.raises(errors.ClientError) as refused:
        await answerer.generate(REQUEST)

    # The real API answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    assert refused.value.code == 400
    assert refused.value.details["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    assert len(fake.requests) == 1


async def test_an_expired_credential_is_refused_with_401_without_retrying(fake, make):
    fake.fail_next(401)

    with pytest.raises(errors.ClientError) as refused:
        await make(GenaiAnswerer).generate(REQUEST)

    assert refused.value.code == 401
    assert refused.value.status == "UNAUTHENTICATED"
    assert len(fake.requests) == 1


async def test_an_error_event_mid_stream_raises_after_the_deltas_before_it(fake, make):
    fake.break_stream_after = 2
    received: list[str] = []

    with pytest.raises(errors.ServerError) as broken:
        async for delta in make(GenaiAnswerer).stream(REQUEST):
            received.append(delta)

    assert received == ["Refunds ", "take "]
    assert broken.value.code == 503


@pytest.mark.parametrize(
    ("kind", "call"),
    [(GenaiAnswerer, generate), (GenaiEmbedder, embed), (GenaiAnswerer, stream)],
    ids=["generate", "embed", "stream"],
)
async def test_a_server_that_hangs_past_the_timeout_raises_a_timeout_error(fake, make, kind, call):
    fake.delay = 30

    with trio.fail_after(10), pytest.raises(httpx.TimeoutException):
        await call(make(kind, **HASTY))
