"""The Anthropic provider through the real ``anthropic`` SDK, against a fake Messages API on
127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import pytest
import trio

from ragcore.generation import Generate
from ragcore.usage import TokenUsage
from ragio.providers.anthropic import MAX_RETRIES, AnthropicAnswerer
from tests.conftest import make_settings
from tests.io.conftest import HASTY, REQUEST, generate, stream
from tests.io.fakes.anthropic_server import FakeAnthropic

MESSAGES = "/v1/messages"
MODEL = "claude-sonnet-4-6"


@pytest.fixture
async def fake(serve_fake) -> FakeAnthropic:
    return await serve_fake(
        FakeAnthropic(api_key="sk-ant-test-key", reply="Refunds take 5 days [1].")
    )


@pytest.fixture
def make(fake: FakeAnthropic, closing) -> Callable[..., AnthropicAnswerer]:
    """``make(**settings)``: an answerer on the fake, its connections closed after the test."""

    def build(max_retries: int = MAX_RETRIES, **overrides: Any) -> AnthropicAnswerer:
        defaults = {"anthropic_api_key": fake.api_key, "anthropic_chat_model": MODEL}
        settings = make_settings(**{**defaults, **overrides})
        return closing(AnthropicAnswerer(settings, base_url=fake.base_url, max_retries=max_retries))

    return build


async def test_generate_returns_the_text_model_and_usage_and_sends_the_prompt(fake, make):
    fake.model = "claude-sonnet-4-6-20260217"  # a dated snapshot, as the API names it

    reply = await make().generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    assert reply.provider == "anthropic"
    assert reply.model == "claude-sonnet-4-6-20260217"
    assert reply.usage == TokenUsage(prompt_tokens=16, completion_tokens=5)
    [sent] = fake.requests_to(MESSAGES)
    assert sent.headers["authorization"] == "Bearer sk-ant-test-key"  # the SDK's way since 2.0
    assert sent.headers["anthropic-version"]
    assert sent.body["model"] == MODEL
    assert sent.body["system"] == REQUEST.prompt.system
    assert sent.body["messages"] == [{"role": "user", "content": REQUEST.prompt.user}]
    assert sent.body["max_tokens"] == 200
    assert sent.body["temperature"] == 0.2


async def test_a_temperature_above_the_apis_range_is_sent_as_its_maximum(fake, make):
    hot = Generate(REQUEST.prompt, max_output_tokens=200, temperature=1.5)

    reply = await make().generate(hot)

    assert reply.text == "Refunds take 5 days [1]."
    assert fake.requests_to(MESSAGES)[0].body["temperature"] == 1.0


async def test_a_model_that_refuses_temperature_is_asked_again_without_it(fake, make):
    fake.rejects_temperature = True  # as Opus 4.7 and later: "`temperature` is deprecated"
    answerer = make()

    first = await answerer.generate(REQUEST)
    second = await answerer.generate(REQUEST)

    assert first.text == second.text == "Refunds take 5 days [1]."
    refused, asked, asked_again = fake.requests_to(MESSAGES)
    assert refused.body["temperature"] == 0.2
    assert "temperature" not in asked.body
    assert "temperature" not in asked_again.body  # remembered: no second refusal


async def test_stream_yields_the_text_deltas_in_order_then_the_reported_usage(fake, make):
    items = [item async for item in make().stream(REQUEST)]

    assert items[:-1] == ["Refunds ", "take ", "5 ", "days ", "[1]."]
    # input tokens from message_start, output tokens from the last message_delta
    assert items[-1] == TokenUsage(prompt_tokens=16, completion_tokens=5)
    assert items[-1] == (await make().generate(REQUEST)).usage
    sent = fake.requests_to(MESSAGES)[0]
    assert sent.body["stream"] is True
    assert sent.body["max_tokens"] == 200


async def test_an_error_event_mid_stream_raises_after_the_deltas_before_it(fake, make):
    fake.break_stream_after = 2
    received: list[str] = []

    with pytest.raises(anthropic.APIStatusError) as broken:
        async for delta in make().stream(REQUEST):
            received.append(delta)

    assert received == ["Refunds ", "take "]
    assert broken.value.body["error"]["type"] == "overloaded_error"


async def test_a_rate_limit_is_retried_after_the_wait_the_server_asks_for(fake, make):
    # Longer than the SDK's own first backoff (at most 0.5 s), so only retry-after explains it.
    fake.fail_next(429, retry_after="0.6")

    reply = await make().generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    limited, retried = fake.requests_to(MESSAGES)
    assert retried.at - limited.at >= 0.6


@pytest.mark.parametrize("status", [500, 529])
async def test_server_errors_and_overload_are_retried_until_one_succeeds(fake, make, status):
    fake.fail_next(status, retry_after="0.01", times=2)

    reply = await make(max_retries=2).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    assert len(fake.requests_to(MESSAGES)) == 3


async def test_a_wrong_key_raises_authentication_error_without_retrying(fake, make):
    answerer = make(anthropic_api_key="sk-ant-wrong-key")

    with pytest.raises(anthropic.AuthenticationError) as refused:
        await answerer.generate(REQUEST)

    assert refused.value.status_code == 401
    assert refused.value.body["error"]["type"] == "authentication_error"
    assert len(fake.requests) == 1


@pytest.mark.parametrize("call", [generate, stream], ids=["generate", "stream"])
async def test_a_server_that_hangs_past_the_timeout_raises_a_timeout_error(fake, make, call):
    fake.delay = 30

    with trio.fail_after(10), pytest.raises(anthropic.APITimeoutError):
        await call(make(**HASTY))
