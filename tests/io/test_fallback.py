"""Rule 6 end to end: the service answers through its fallback providers when the primary fails.

Gemini is the primary, Anthropic (then OpenAI) the fallbacks, each a fake server on
127.0.0.1 spoken to by its real SDK. The SDKs find the fakes through their own base-URL
variables (GOOGLE_GEMINI_BASE_URL, ANTHROPIC_BASE_URL) and OPENAI_BASE_URL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import psycopg
import pydantic
import pytest
import trio
from google.genai import errors, types

from ragcore.chat.fallback import Attempt, FailureKind
from ragcore.generation import Generate, Prompt
from ragio.providers import ProviderUnavailable, build_answerers
from ragio.providers.chain import open_stream
from ragio.providers.failures import AllProvidersFailed, AnswerBroken, classify_failure
from ragio.service import Service
from ragio.startup import open_service
from tests.conftest import make_settings
from tests.io.fakes.anthropic_server import FakeAnthropic
from tests.io.fakes.gemini_server import FakeGemini
from tests.io.fakes.openai_server import FakeOpenAI

TIMEOUT = 2  # PROVIDER_TIMEOUT_SECONDS: how long a hanging provider holds up the answer
GEMINI_KEY, ANTHROPIC_KEY, OPENAI_KEY = "gemini-secret-1", "sk-ant-secret-2", "sk-secret-3"
GENERATE = "generateContent"
MESSAGES = "/v1/messages"
CHAT = "/v1/chat/completions"

REFUNDS = """# Returns and refunds

Customers can return any item within 30 days of delivery for a full refund.
Refunds are paid to the original payment method within 5 business days.
"""
QUESTION = {"question": "How long do I have to return an item?"}


@pytest.fixture
async def gemini(serve_fake) -> FakeGemini:
    return await serve_fake(FakeGemini(GEMINI_KEY, reply="Gemini says: within 30 days [1]."))


@pytest.fixture
async def claude(serve_fake) -> FakeAnthropic:
    return await serve_fake(FakeAnthropic(ANTHROPIC_KEY, reply="Claude says: within 30 days [1]."))


@pytest.fixture
async def gpt(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(OPENAI_KEY, reply="GPT says: within 30 days [1]."))


@pytest.fixture
def fallbacks() -> str:
    """LLM_FALLBACK_PROVIDERS; parametrize ``fallbacks`` to change it."""
    return "anthropic"


@pytest.fixture
def settings_overrides(
    gemini: FakeGemini,
    claude: FakeAnthropic,
    gpt: FakeOpenAI,
    fallbacks: str,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.base_url)
    return {
        "llm_provider": "genai",
        "llm_fallback_providers": fallbacks,
        "embedding_provider": "local",  # the knowledge base stays offline: only answers fail
        "genai_api_key": GEMINI_KEY,
        "anthropic_api_key": ANTHROPIC_KEY,
        "anthropic_chat_model": "claude-sonnet-4-6",
        "openai_api_key": OPENAI_KEY,
        "openai_base_url": gpt.base_url,
        "provider_timeout_seconds": TIMEOUT,
    }


@pytest.fixture
async def ask(api: httpx.AsyncClient) -> Callable[[], Any]:
    """POST /chat with a question the knowledge base can answer."""
    added = await api.post("/documents", json={"name": "refunds.md", "text": REFUNDS})
    assert added.status_code == 201, added.text

    async def post() -> httpx.Response:
        return await api.post("/chat", json=QUESTION)

    return post


# The ways a primary fails that rule 6 moves on from. Every failure outlasts the SDK's
# retries; the real API's answer to a wrong key is a 400 with reason API_KEY_INVALID.
FAILURES: dict[str, Callable[[FakeGemini], None]] = {
    "rate limited": lambda fake: fake.fail_next(429, retry_delay="0.01s", times=3),
    "server error": lambda fake: fake.fail_next(500, retry_delay="0.01s", times=3),
    "overloaded": lambda fake: fake.fail_next(503, retry_delay="0.01s", times=3),
    "credential refused (401)": lambda fake: fake.fail_next(401),
    "wrong key": lambda fake: setattr(fake, "api_key", "a-key-the-service-does-not-have"),
    "hangs past the timeout": lambda fake: setattr(fake, "delay", 30),
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
async def test_when_the_primary_fails_the_fallback_answers_and_the_response_says_so(
    gemini, claude, ask, failure
):
    failure(gemini)

    with trio.fail_after(4 * TIMEOUT):
        response = await ask()

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["provider"] == "anthropic"
    assert body["answer"] == "Claude says: within 30 days [1]."
    assert [c["document_name"] for c in body["citations"]] == ["refunds.md"]
    assert gemini.requests_to(GENERATE), "the primary was asked first"
    assert len(claude.requests_to(MESSAGES)) == 1


async def test_a_healthy_primary_answers_and_the_fallback_is_not_asked(gemini, claude, ask, api):
    health = (await api.get("/health")).json()
    assert health["providers"]["llm"]["name"] == "genai"
    assert health["providers"]["llm_fallbacks"] == ["anthropic"]
    response = await ask()

    assert response.status_code == 200, response.text
    assert response.json()["provider"] == "genai"
    assert response.json()["answer"] == "Gemini says: within 30 days [1]."
    assert claude.requests == []


@pytest.mark.parametrize("fallbacks", ["anthropic,openai"])
async def test_fallbacks_are_tried_in_the_order_listed(gemini, claude, gpt, ask):
    gemini.fail_next(429, retry_delay="0.01s", times=3)
    claude.fail_next(529, retry_after="0.01", times=3)  # overloaded, past its retries

    response = await ask()

    assert response.status_code == 200, response.text
    assert response.json()["provider"] == "openai"
    assert response.json()["answer"] == "GPT says: within 30 days [1]."
    asked = sorted(
        [(r.at, "genai") for r in gemini.requests_to(GENERATE)]
        + [(r.at, "anthropic") for r in claude.requests_to(MESSAGES)]
        + [(r.at, "openai") for r in gpt.requests_to(CHAT)]
    )
    assert [name for _, name in asked] == ["genai"] * 3 + ["anthropic"] * 3 + ["openai"]


@pytest.mark.parametrize("fallbacks", ["extractive"])
async def test_the_offline_extractive_answerer_can_be_the_last_resort(gemini, ask):
    gemini.delay = 30

    with trio.fail_after(4 * TIMEOUT):
        response = await ask()

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["provider"] == "extractive"
    assert "within 30 days of delivery" in body["answer"]
    assert [c["document_name"] for c in body["citations"]] == ["refunds.md"]


@pytest.mark.parametrize("fallbacks", ["anthropic,openai"])
async def test_when_every_provider_fails_the_answer_is_a_503_problem_naming_each(
    gemini, claude, gpt, ask, database_url
):
    gemini.fail_next(429, retry_delay="0.01s", times=3)
    claude.api_key = "sk-ant-rotated"  # the service's key no longer works
    gpt.delay = 30

    with trio.fail_after(4 * TIMEOUT):
        response = await ask()

    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == 503
    assert problem["title"] == "No answering provider could answer"
    assert problem["detail"] == (
        "no answering provider could answer: genai rate limited (HTTP 429); "
        "anthropic refused the API key (HTTP 401); openai timed out"
    )
    assert problem["providers"] == [
        {"provider": "genai", "failure": "rate_limited", "status": 429},
        {"provider": "anthropic", "failure": "bad_key", "status": 401},
        {"provider": "openai", "failure": "timeout", "status": None},
    ]
    for secret in (GEMINI_KEY, ANTHROPIC_KEY, OPENAI_KEY, "secret", "Traceback"):
        assert secret not in response.text
    # left behind: the question, recorded as a failed turn with no answer, and nothing else
    with psycopg.connect(database_url) as conn:
        turns = conn.execute("SELECT question, answer, outcome, provider FROM conversation_turns")
        assert turns.fetchall() == [(QUESTION["question"], "", "failed", None)]
        assert conn.execute("SELECT count(*) FROM usage_records").fetchone() == (0,)


@pytest.mark.parametrize("fallbacks", [""])
async def test_with_a_blank_fallback_list_a_failing_primary_is_a_503_and_nothing_else_is_asked(
    gemini, claude, gpt, ask
):
    gemini.fail_next(500, retry_delay="0.01s", times=3)

    response = await ask()

    assert response.status_code == 503
    problem = response.json()
    assert problem["providers"] == [{"provider": "genai", "failure": "unavailable", "status": 500}]
    assert "LLM_FALLBACK_PROVIDERS" in problem["detail"]
    assert claude.requests == [] and gpt.requests == []


async def test_a_request_the_primary_rejects_is_not_passed_on_to_the_fallback(gemini, claude, ask):
    gemini.fail_next(400)  # INVALID_ARGUMENT: the next provider would get the same request

    response = await ask()

    assert response.status_code == 502
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["detail"] == (
        "the answering provider could not be used: genai rejected the request (HTTP 400)"
    )
    assert problem["providers"] == [{"provider": "genai", "failure": "rejected", "status": 400}]
    assert claude.requests == []


# ---------------------------------------------------------------- streaming

REQUEST = Generate(
    Prompt(
        system="Answer only from the numbered sources.",
        user="Sources:\n\n[1] (refunds.md)\nReturns within 30 days.\n\nQuestion: How long?",
        question="How long?",
        sources=(),
    ),
    max_output_tokens=200,
    temperature=0.2,
)


async def test_a_stream_falls_back_when_the_primary_fails_before_its_first_delta(
    gemini, claude, service: Service
):
    gemini.fail_next(429, retry_delay="0.01s", times=3)

    async with await open_stream(service.answerer, REQUEST, TIMEOUT) as stream:
        deltas = [delta async for delta in stream]

    assert stream.provider == "anthropic"
    assert "".join(deltas) == "Claude says: within 30 days [1]."
    assert len(deltas) > 1


async def test_a_stream_that_breaks_after_its_first_delta_is_not_restarted_elsewhere(
    gemini, claude, service: Service
):
    gemini.break_stream_after = 2
    received: list[str] = []

    async with await open_stream(service.answerer, REQUEST, TIMEOUT) as stream:
        assert stream.provider == "genai"
        with pytest.raises(AnswerBroken) as broken:
            async for delta in stream:
                received.append(delta)

    assert received == ["Gemini ", "says: "]
    assert broken.value.status == 503  # a problem naming the provider, not a 500
    assert broken.value.attempts == (Attempt("genai", FailureKind.UNAVAILABLE, 503),)
    assert isinstance(broken.value.__cause__, errors.ServerError)
    assert claude.requests == []  # the user already saw Gemini's words


@pytest.mark.parametrize("fallbacks", [""])
async def test_a_stream_with_every_provider_failing_raises_all_providers_failed(
    gemini, service: Service
):
    gemini.delay = 30

    with trio.fail_after(4 * TIMEOUT), pytest.raises(AllProvidersFailed) as failed:
        await open_stream(service.answerer, REQUEST, TIMEOUT)

    assert [(a.provider, a.failure.value) for a in failed.value.attempts] == [("genai", "timeout")]


# ---------------------------------------------------------------- building the chain


def test_a_provider_chosen_without_its_key_stops_start_up_naming_the_setting():
    with pytest.raises(ProviderUnavailable) as primary:
        build_answerers(make_settings(llm_provider="genai"))
    assert "LLM_PROVIDER selects genai, but GENAI_API_KEY is not set" in str(primary.value)

    with pytest.raises(ProviderUnavailable) as fallback:
        build_answerers(make_settings(openai_api_key="k", llm_fallback_providers="anthropic"))
    assert "LLM_FALLBACK_PROVIDERS selects anthropic, but ANTHROPIC_API_KEY is not set" in str(
        fallback.value
    )


async def test_the_chain_is_built_in_order_and_its_connections_close_with_the_service(
    settings_overrides, database_url, tmp_path
):
    settings = make_settings(
        **{**settings_overrides, "llm_fallback_providers": "anthropic,openai,extractive"},
        database_url=database_url,
        data_dir=tmp_path / "data",
    )
    async with open_service(settings) as service:
        chain = service.answerer
        assert chain.names == ("genai", "anthropic", "openai", "extractive")
        assert (chain.name, chain.model) == ("genai", "gemini-2.5-flash")  # for /health
    genai_answerer = chain.answerers[0]
    assert genai_answerer.http.is_closed


# ---------------------------------------------------------------- provider errors, classified


def _invalid(model: Any, fields: dict[str, Any]) -> Exception:
    """The pydantic error google-genai raises when ``fields`` do not fit ``model``."""
    try:
        model.model_validate(fields)
    except pydantic.ValidationError as error:
        return error
    raise AssertionError(f"{fields} fit {model}")


def _anthropic_error(status: int, type: str, message: str) -> Exception:
    """The error the SDK raises for this body; an ``error`` event mid-stream has status 200."""
    body = {"type": "error", "error": {"type": type, "message": message}}
    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    response = httpx2.Response(status, json=body, request=request)
    kind = anthropic.BadRequestError if status == 400 else anthropic.APIStatusError
    return kind(message, response=response, body=body)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            errors.ClientError(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "User location is not supported for the API use.",
                        "status": "FAILED_PRECONDITION",
                    }
                },
            ),
            (FailureKind.BAD_KEY, 400),
        ),
        (
            errors.ClientError(
                400, {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}
            ),
            (FailureKind.REJECTED, 400),
        ),
        (
            _anthropic_error(
                400,
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
            (FailureKind.BAD_KEY, 400),
        ),
        (
            _anthropic_error(200, "overloaded_error", "Overloaded"),  # an error event mid-stream
            (FailureKind.UNAVAILABLE, 200),
        ),
        (
            openai.APIError(  # OpenRouter's error event mid-stream, on a 200
                "Upstream error",
                httpx2.Request("POST", "https://openrouter.ai/api/v1/chat/completions"),
                body={"code": 502, "message": "Upstream error"},
            ),
            (FailureKind.UNAVAILABLE, None),
        ),
        (
            json.JSONDecodeError("Expecting value", "<!DOCTYPE html>", 0),
            (FailureKind.BAD_REPLY, 200),
        ),
        (
            _invalid(types.GenerateContentResponse, {"candidates": "none"}),
            (FailureKind.BAD_REPLY, 200),
        ),
        # the anthropic SDK lets its client's errors out of a stream's events as they are
        (httpx2.ReadTimeout("timed out"), (FailureKind.TIMEOUT, None)),
        (httpx2.ReadError("connection reset"), (FailureKind.UNAVAILABLE, None)),
        (_invalid(types.GenerateContentConfig, {"temperature": "hot"}), None),  # our request
        (ValueError("a bug of ours"), None),
        (KeyError("choices"), None),  # reading a reply is checked where it is read
    ],
    ids=[
        "gemini region",
        "gemini bad request",
        "anthropic credit",
        "anthropic event",
        "openai event",
        "not json",
        "gemini reply shape",
        "stream stalls",
        "stream reset",
        "gemini request shape",
        "bug",
        "key error",
    ],
)
def test_provider_errors_are_classified_by_what_another_provider_could_avoid(error, expected):
    assert classify_failure(error) == expected
