"""POST /chat/stream: the answer as server-sent events, through the same pipeline."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI

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
        assert done["usage"]["estimated"] is True

        usage = (await api.get("/usage")).json()
        assert usage["today"]["tokens"] == (
            done["usage"]["prompt_tokens"] + done["usage"]["completion_tokens"]
        )

    async def test_an_embedding_provider_outage_is_a_503_problem_before_any_event(
        self, api, fake
    ):
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
