"""POST /chat/stream: the answer as server-sent events, through the same pipeline."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from ragcore.usage import estimate_tokens
from tests.io.conftest import on_openai
from tests.io.fakes.anthropic_server import FakeAnthropic
from tests.io.fakes.gemini_server import FakeGemini
from tests.io.fakes.openai_server import FakeOpenAI, count_tokens

FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."


async def events(api: httpx.AsyncClient, **params: str) -> tuple[httpx.Response, list[tuple]]:
    """The response and its (event, data) pairs, parsed as an SSE client does."""
    received: list[tuple[str, Any]] = []
    async with api.stream("POST", "/chat/stream", params=params) as response:
        if response.headers["content-type"].startswith("text/event-stream"):
            kind = "message"
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line[len("event: ") :]
                elif line.startswith("data: "):
                    received.append((kind, json.loads(line[len("data: ") :])))
        else:
            await response.aread()
    return response, received


SPEC_URI = "urn:ragchat:openapi"
STREAM_SCHEMA = "/paths/~1chat~1stream/post/responses/200/content/text~1event-stream/schema"


async def served_schema(api: httpx.AsyncClient, pointer: str) -> Draft202012Validator:
    """A validator for the schema at ``pointer`` in the /openapi.json the app serves, its
    $refs resolved in that document."""
    spec = (await api.get("/openapi.json")).json()
    registry = Registry().with_resource(SPEC_URI, DRAFT202012.create_resource(spec))
    return Draft202012Validator({"$ref": f"{SPEC_URI}#{pointer}"}, registry=registry)


def assert_valid(validator: Draft202012Validator, instance: Any) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]
    assert not errors, errors


async def assert_stream_matches_the_served_schema(api, received: list[tuple]) -> None:
    """Each real event, and the stream as the list of them, against /openapi.json."""
    as_served = [{"event": kind, "data": data} for kind, data in received]
    assert_valid(await served_schema(api, STREAM_SCHEMA), as_served)
    event = await served_schema(api, "/components/schemas/ChatStreamEvent")
    for item in as_served:
        assert_valid(event, item)
    # the schema tells the events apart: one kind's data is not valid as another's
    token, done = as_served[0], as_served[-1]
    assert not event.is_valid({"event": "token", "data": done["data"]})
    assert not event.is_valid({"event": done["event"], "data": token["data"]})
    assert not event.is_valid({"event": "token", "data": json.dumps(token["data"])})


async def test_offline_the_answer_streams_then_arrives_whole_with_citations(api):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    response, received = await events(api, question="When does the shop open?")
    assert response.status_code == 200
    kinds = [kind for kind, _ in received]
    assert kinds[-1] == "done" and set(kinds[:-1]) == {"token"}
    done = received[-1][1]
    assert "".join(data["text"] for kind, data in received if kind == "token") == done["answer"]
    assert "9 am" in done["answer"]
    assert done["citations"][0]["document_name"] == "faq.md"
    # no model ran: zero tokens, as /chat records them, not an estimate of the texts
    assert done["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "estimated": False}


async def test_the_served_schema_describes_the_real_token_and_done_events(api):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    response, received = await events(api, question="When does the shop open?")
    assert response.status_code == 200
    assert [kind for kind, _ in received][-2:] == ["token", "done"]
    await assert_stream_matches_the_served_schema(api, received)
    # done's data is what POST /chat answers: the same schema holds for both
    answer = await api.post("/chat", params={"question": "When does the shop open?"})
    assert_valid(await served_schema(api, "/components/schemas/ChatAnswer"), answer.json())
    assert answer.json().keys() == received[-1][1].keys()


async def test_a_bad_question_is_an_ordinary_problem_before_any_event(api):
    response, received = await events(api, question="")
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert received == []


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test", reply="It opens at 9 am [1] [4]."))


class TestWithAStreamingProvider:
    @pytest.fixture
    async def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return on_openai(fake, usage_ledger="true")

    async def test_tokens_arrive_word_by_word_and_done_holds_the_checked_answer(
        self, api, fake, database_url
    ):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        response, received = await events(api, question="When does the shop open?")
        tokens = [data["text"] for kind, data in received if kind == "token"]
        assert len(tokens) > 3  # streamed, not sent whole
        assert "".join(tokens) == "It opens at 9 am [1] [4]."
        [chat] = fake.requests_to("/v1/chat/completions")
        assert chat.body["stream"] is True
        kind, done = received[-1]
        assert kind == "done"
        assert done["answer"] == "It opens at 9 am [1]."  # the marker to no source is gone
        assert [c["number"] for c in done["citations"]] == [1]
        assert done["provider"] == "openai"
        assert chat.body["stream_options"] == {"include_usage": True}
        assert done["usage"] == {  # the counts of the fake's last chunk
            "prompt_tokens": sum(count_tokens(m["content"]) for m in chat.body["messages"]),
            "completion_tokens": count_tokens("It opens at 9 am [1] [4]."),
            "estimated": False,
        }

        usage = (await api.get("/usage")).json()
        assert usage["today"]["tokens"] == (
            done["usage"]["prompt_tokens"] + done["usage"]["completion_tokens"]
        )
        assert usage["by_day"][-1]["includes_estimates"] is False

    async def test_a_server_that_reports_no_usage_while_streaming_is_estimated(self, api, fake):
        fake.stream_usage = "never"  # as compatible servers that ignore stream_options
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        response, received = await events(api, question="When does the shop open?")
        kind, done = received[-1]
        assert kind == "done"
        assert done["usage"]["estimated"] is True
        assert done["usage"]["completion_tokens"] == estimate_tokens("It opens at 9 am [1] [4].")

        usage = (await api.get("/usage")).json()
        assert usage["today"]["tokens"] == (
            done["usage"]["prompt_tokens"] + done["usage"]["completion_tokens"]
        )
        assert usage["by_day"][-1]["includes_estimates"] is True

    async def test_an_embedding_provider_outage_is_a_503_problem_before_any_event(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        fake.fail_next(500, times=10)
        response, received = await events(api, question="When does the shop open?")
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["detail"].startswith("embedding provider openai")
        assert received == []


class TestWithLocalEmbeddingsAndAnOpenAIAnswerer:
    @pytest.fixture
    async def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return {
            "openai_api_key": fake.api_key,
            "openai_base_url": fake.base_url,
            "embedding_provider": "local",
        }

    async def test_a_provider_failing_before_the_first_token_is_a_503_problem(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        fake.fail_next(500, times=10)
        response, received = await events(api, question="When does the shop open?")
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["providers"] == [
            {"provider": "openai", "failure": "unavailable", "status": 500}
        ]
        assert received == []

    async def test_the_served_schema_describes_the_real_error_event(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        fake.break_stream_after = 2  # the provider breaks off after its first words
        response, received = await events(api, question="When does the shop open?")
        assert response.status_code == 200
        assert [kind for kind, _ in received] == ["token", "token", "error"]
        assert received[-1][1]["status"] == 503
        await assert_stream_matches_the_served_schema(api, received)


REPLY = "It opens at 9 am [1]."


def sent_prompt_tokens(provider: str, body: dict[str, Any]) -> int:
    """The prompt tokens the fake counted, from the request it received (one word a token)."""
    if provider == "openai":
        texts = [m["content"] for m in body["messages"]]
    elif provider == "anthropic":
        texts = [body["system"]] + [m["content"] for m in body["messages"]]
    else:
        contents = [*body["contents"], body["systemInstruction"]]
        texts = [part["text"] for content in contents for part in content["parts"]]
    return sum(count_tokens(text) for text in texts)


class TestUsageOfEachStreamingProvider:
    """Each provider reports token counts while streaming (OpenAI's usage chunk, Anthropic's
    message_start and message_delta, Gemini's usageMetadata); the ledger records them."""

    @pytest.fixture(params=["openai", "anthropic", "genai"])
    async def provider(self, request, serve_fake, monkeypatch) -> tuple[str, Any]:
        if request.param == "openai":
            return "openai", await serve_fake(FakeOpenAI(api_key="sk-test", reply=REPLY))
        if request.param == "anthropic":
            fake: Any = await serve_fake(FakeAnthropic(api_key="sk-ant-test", reply=REPLY))
            monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
            return "anthropic", fake
        fake = await serve_fake(FakeGemini(api_key="gemini-test", reply=REPLY))
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)
        return "genai", fake

    @pytest.fixture
    async def settings_overrides(self, provider: tuple[str, Any]) -> dict[str, Any]:
        name, fake = provider
        keys = {
            "openai": {"openai_api_key": fake.api_key, "openai_base_url": fake.base_url},
            "anthropic": {"anthropic_api_key": fake.api_key},
            "genai": {"genai_api_key": fake.api_key},
        }
        return {
            "llm_provider": name,
            "embedding_provider": "local",
            "usage_ledger": "true",
            **keys[name],
        }

    async def test_the_ledger_records_the_counts_the_provider_reported(self, api, provider):
        name, fake = provider
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        response, received = await events(api, question="When does the shop open?")
        assert response.status_code == 200
        assert len([kind for kind, _ in received if kind == "token"]) > 3  # streamed
        kind, done = received[-1]
        assert kind == "done"
        assert done["provider"] == name
        [sent] = fake.requests  # local embeddings: the one request is the streamed answer
        assert done["usage"] == {
            "prompt_tokens": sent_prompt_tokens(name, sent.body),
            "completion_tokens": count_tokens(REPLY),
            "estimated": False,
        }

        usage = (await api.get("/usage")).json()
        [day] = usage["by_day"]
        assert (day["calls"], day["prompt_tokens"], day["completion_tokens"]) == (
            1,
            done["usage"]["prompt_tokens"],
            done["usage"]["completion_tokens"],
        )
        assert day["includes_estimates"] is False
        assert usage["this_month_by_provider"][0]["provider"] == name
