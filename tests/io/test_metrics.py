"""GET /metrics through the real app, as Prometheus scrapes it: parsed with the Prometheus
client's own parser. Counters are the process's (they start at zero with it, and this
test process serves many apps), so each test compares a scrape after with one before."""

from __future__ import annotations

from typing import Any

import attrs
import httpx
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from ragcore.usage import estimate_tokens
from ragio.service import Service
from tests.io.channels import QUESTION as CHANNEL_QUESTION
from tests.io.channels import add_refunds, wait_for
from tests.io.conftest import on_openai, serve_service
from tests.io.fakes.openai_server import FakeOpenAI, count_tokens
from tests.io.fakes.rest_server import FakeRestApi
from tests.io.fakes.telegram_server import FakeTelegram

KEY = "metrics-test-key-5d41402abc4b2a76"
FERNET_KEY = "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU="
REFUNDS = """# Returns and refunds

Customers can return any item within 30 days of delivery for a full refund.
Refunds are paid to the original payment method within 5 business days.
"""
QUESTION = "How long do I have to return an item?"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(api: httpx.AsyncClient, **headers: str) -> Samples:
    response = await api.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value; 0 for a series not there yet (a counter not yet counted)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def series(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (found, labels) in samples if found == name]


async def test_a_request_shows_in_its_counter_and_its_routes_latency_histogram(api):
    before = await scrape(api)
    for _ in range(3):
        assert (await api.get("/documents/9f1c0d7e-0000-4000-8000-000000000000")).status_code == 404
    assert (await api.get("/health")).status_code == 200
    after = await scrape(api)

    requests = "ragchat_http_requests_total"
    route = {"method": "GET", "route": "/documents/<id>"}
    assert (
        value(after, requests, **route, status="404")
        - value(before, requests, **route, status="404")
        == 3
    )
    health = {"method": "GET", "route": "/health", "status": "200"}
    assert value(after, requests, **health) - value(before, requests, **health) == 1
    # the previous scrape is counted too, once its answer was out
    scraped = {"method": "GET", "route": "/metrics", "status": "200"}
    assert value(after, requests, **scraped) - value(before, requests, **scraped) == 1

    latency = "ragchat_http_request_duration_seconds"
    count = value(after, f"{latency}_count", **route) - value(before, f"{latency}_count", **route)
    assert count == 3
    slowest = value(after, f"{latency}_bucket", **route, le="+Inf") - value(
        before, f"{latency}_bucket", **route, le="+Inf"
    )
    assert slowest == 3
    assert value(after, f"{latency}_sum", **route) > value(before, f"{latency}_sum", **route)
    # every label is a template: no series names the id asked for
    routes = {labels["route"] for labels in series(after, requests)}
    assert not any("9f1c0d7e" in r for r in routes)


async def test_paths_no_route_matches_share_one_label_and_methods_one_each(api):
    before = await scrape(api)
    for path in ("/nothing-here", "/wp-login.php", "/documents/1/2/3", "/.env"):
        assert (await api.get(path)).status_code == 404
    assert (await api.request("BREW", "/health")).status_code in (400, 405, 501)
    after = await scrape(api)

    requests = "ragchat_http_requests_total"
    unmatched = {"method": "GET", "route": "unmatched", "status": "404"}
    assert value(after, requests, **unmatched) - value(before, requests, **unmatched) == 4
    routes = {labels["route"] for labels in series(after, requests)}
    assert all(r == "unmatched" or r.startswith("/") for r in routes)
    assert not routes & {"/nothing-here", "/wp-login.php", "/.env"}
    methods = {labels["method"] for labels in series(after, requests)}
    assert "BREW" not in methods and "OTHER" in methods


async def test_the_gauges_that_exist_are_there(api):
    samples = await scrape(api)
    assert value(samples, "ragchat_http_requests_in_flight") >= 1  # this scrape itself
    assert value(samples, "ragchat_voice_calls_in_progress") == 0
    assert value(samples, "ragchat_database_waiting") == 0
    assert ("ragchat_actions_pending_approval", frozenset()) in samples
    assert value(samples, "ragchat_actions_pending_approval") == 0
    assert ("ragchat_integration_syncs_running", frozenset()) in samples
    assert value(samples, "process_resident_memory_bytes") > 0


# ---------------------------------------------------------------- providers and tokens


@pytest.mark.parametrize("settings_overrides", [{"webhook_targets": "crm=https://crm.example/in"}])
async def test_actions_held_for_the_owner_show_until_decided(api):
    assert (await api.post("/autonomy", json={"mode": "semi"})).status_code == 200
    webhook = {"kind": "webhook", "target": "crm", "data": {"order": 7}}
    held = [(await api.post("/actions", json=webhook)).json() for _ in range(2)]
    assert [action["status"] for action in held] == ["pending", "pending"]
    assert value(await scrape(api), "ragchat_actions_pending_approval") == 2

    rejected = await api.post(f"/autonomy/pending/{held[0]['id']}/reject")
    assert rejected.status_code == 200, rejected.text
    assert value(await scrape(api), "ragchat_actions_pending_approval") == 1


@pytest.fixture
async def gpt(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI("sk-metrics-secret", reply="Within 30 days [1]."))


async def ask(api: httpx.AsyncClient, **body: Any) -> httpx.Response:
    added = await api.post("/documents", json={"name": "refunds.md", "text": REFUNDS})
    assert added.status_code in (200, 201), added.text
    return await api.post("/chat", json={"question": QUESTION, **body})


class TestProviders:
    """The service answering with OpenAI (a fake speaking its wire format), falling back to
    the offline answerer."""

    @pytest.fixture
    def settings_overrides(self, gpt: FakeOpenAI) -> dict[str, Any]:
        return on_openai(
            gpt,
            embedding_provider="local",  # the knowledge base stays offline: only answers fail
            llm_fallback_providers="extractive",
            provider_timeout_seconds=5,
        )

    async def test_a_failing_provider_shows_its_failure_and_the_fallback_its_call(self, api, gpt):
        gpt.fail_next(503, retry_after="0.01", times=3)  # outlasts the SDK's two retries
        before = await scrape(api)
        response = await ask(api)
        after = await scrape(api)

        assert response.status_code == 200, response.text
        assert response.json()["provider"] == "extractive"
        calls, failures = "ragchat_provider_calls_total", "ragchat_provider_failures_total"
        openai = {"provider": "openai", "task": "answer"}
        assert value(after, calls, **openai) - value(before, calls, **openai) == 1
        failed = {**openai, "failure": "unavailable"}
        assert value(after, failures, **failed) - value(before, failures, **failed) == 1
        extractive = {"provider": "extractive", "task": "answer"}
        assert value(after, calls, **extractive) - value(before, calls, **extractive) == 1
        offline = {**extractive, "failure": "unavailable"}
        assert value(after, failures, **offline) == value(before, failures, **offline)
        embedding = {"provider": "local", "task": "embedding"}
        assert value(after, calls, **embedding) - value(before, calls, **embedding) >= 2
        chat = {"method": "POST", "route": "/chat", "status": "200"}
        assert (
            value(after, "ragchat_http_requests_total", **chat)
            - value(before, "ragchat_http_requests_total", **chat)
            == 1
        )

    async def test_tokens_are_counted_by_provider_role_and_kind_as_reported(self, api, gpt):
        before = await scrape(api)
        response = await ask(api, role="support")
        after = await scrape(api)

        assert response.status_code == 200, response.text
        assert response.json()["provider"] == "openai"
        [chat] = gpt.requests_to("/v1/chat/completions")
        sent = sum(count_tokens(str(m.get("content") or "")) for m in chat.body["messages"])
        tokens = "ragchat_tokens_total"
        support = {"provider": "openai", "role": "support"}
        prompt = value(after, tokens, **support, kind="prompt") - value(
            before, tokens, **support, kind="prompt"
        )
        completion = value(after, tokens, **support, kind="completion") - value(
            before, tokens, **support, kind="completion"
        )
        assert prompt == sent
        assert completion == count_tokens("Within 30 days [1].")

    async def test_a_streamed_answer_is_counted_once_it_has_ended(self, api, gpt):
        await api.post("/documents", json={"name": "refunds.md", "text": REFUNDS})
        before = await scrape(api)
        async with api.stream("POST", "/chat/stream", json={"question": QUESTION}) as response:
            assert response.status_code == 200
            text = "".join([piece async for piece in response.aiter_text()])
        after = await scrape(api)

        assert "30 days" in text
        route = {"method": "POST", "route": "/chat/stream"}
        assert (
            value(after, "ragchat_http_requests_total", **route, status="200")
            - value(before, "ragchat_http_requests_total", **route, status="200")
            == 1
        )
        calls = {"provider": "openai", "task": "answer"}
        assert (
            value(after, "ragchat_provider_calls_total", **calls)
            - value(before, "ragchat_provider_calls_total", **calls)
            == 1
        )
        completion = {"provider": "openai", "role": "none", "kind": "completion"}
        assert value(after, "ragchat_tokens_total", **completion) > value(
            before, "ragchat_tokens_total", **completion
        )

    async def test_the_local_embedders_tokens_are_counted_estimated(self, api, gpt):
        before = await scrape(api)
        response = await ask(api)
        after = await scrape(api)

        assert response.status_code == 200, response.text
        local = {"provider": "local", "role": "none", "kind": "embedding"}
        tokens = "ragchat_tokens_total"
        # at least the question (the document may be stored already), 4 characters a token
        grew = value(after, tokens, **local) - value(before, tokens, **local)
        assert grew >= estimate_tokens(QUESTION)


class TestEmbeddingTokens:
    """Embeddings by OpenAI (a fake), which reports each request's tokens."""

    @pytest.fixture
    def settings_overrides(self, gpt: FakeOpenAI) -> dict[str, Any]:
        return on_openai(gpt, provider_timeout_seconds=5)

    async def test_embedding_tokens_are_counted_as_the_provider_reported_them(self, api, gpt):
        before = await scrape(api)
        response = await ask(api, role="support")
        after = await scrape(api)

        assert response.status_code == 200, response.text
        embedded = [
            text
            for sent in gpt.requests_to("/v1/embeddings")
            for text in (
                [sent.body["input"]] if isinstance(sent.body["input"], str) else sent.body["input"]
            )
        ]
        assert QUESTION in embedded
        reported = sum(count_tokens(text) for text in embedded)  # the fake's own counting
        assert reported != sum(estimate_tokens(text) for text in embedded)
        tokens = "ragchat_tokens_total"
        embedding = {"provider": "openai", "role": "none", "kind": "embedding"}
        assert value(after, tokens, **embedding) - value(before, tokens, **embedding) == reported
        prompt = {"provider": "openai", "role": "support", "kind": "prompt"}
        assert value(after, tokens, **prompt) > value(before, tokens, **prompt)  # told apart


class TestChannelQueue:
    """Telegram messages answered in the background, 8 at once: a slow provider makes the
    ninth wait, and the queue shows it."""

    TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
    SECRET = "webhook-secret_0123"

    @pytest.fixture
    async def telegram(self, serve_fake) -> FakeTelegram:
        return await serve_fake(FakeTelegram(self.TOKEN))

    @pytest.fixture
    def settings_overrides(self, gpt: FakeOpenAI, telegram: FakeTelegram) -> dict[str, Any]:
        return on_openai(
            gpt,
            embedding_provider="local",
            telegram_bot_token=self.TOKEN,
            telegram_webhook_secret=self.SECRET,
            telegram_api_base_url=telegram.base_url,
        )

    async def test_messages_being_answered_and_waiting_show_until_answered(
        self, api, gpt, telegram
    ):
        await add_refunds(api)
        gpt.chat_delay = 60  # every answer waits for the provider until released
        for update_id in range(9001, 9010):
            update = {
                "update_id": update_id,
                "message": {
                    "message_id": update_id,
                    "date": 1_700_000_000,
                    # nine customers: one chat's messages are answered one at a time
                    "chat": {"id": update_id, "type": "private"},
                    "from": {"id": update_id, "is_bot": False, "first_name": "Ada"},
                    "text": CHANNEL_QUESTION,
                },
            }
            headers = {"X-Telegram-Bot-Api-Secret-Token": self.SECRET}
            response = await api.post("/webhook/telegram", json=update, headers=headers)
            assert response.status_code == 200
        await wait_for(lambda: len(gpt.requests_to("/v1/chat/completions")) == 8)
        busy = await scrape(api)
        assert value(busy, "ragchat_channel_answers_in_progress") == 8
        assert value(busy, "ragchat_channel_answers_waiting") == 1

        gpt.close()  # the provider answers every call now
        await wait_for(lambda: len(telegram.sent) == 9)
        await wait_for(lambda: not gpt.in_flight)
        with trio.fail_after(10):
            while value(idle := await scrape(api), "ragchat_channel_answers_in_progress"):
                await trio.sleep(0.05)
        assert value(idle, "ragchat_channel_answers_waiting") == 0


@pytest.mark.parametrize(
    "settings_overrides",
    [
        {
            "addon_encryption_key": FERNET_KEY,
            "integrations_allow_http_loopback": True,  # the fake: http on 127.0.0.1
            "integrations_allow_private_targets": True,
        }
    ],
)
async def test_a_data_source_syncing_shows_until_its_sync_ends(api, serve_fake):
    fake = await serve_fake(FakeRestApi("Authorization", "Bearer t-1", 1200, page_size=500))
    fake.delay = 0.5  # a page every half second: three pages
    body = {
        "name": "Slow API",
        "source_type": "rest_api",
        "base_url": fake.base_url,
        "records_path": "/v1/customers",
        "auth_header": "Authorization: Bearer t-1",
    }
    created = await api.post("/integrations", json=body)
    assert created.status_code == 201, created.text
    url = f"/integrations/{created.json()['id']}"
    assert value(await scrape(api), "ragchat_integration_syncs_running") == 0

    assert (await api.post(f"{url}/sync")).status_code == 202
    assert value(await scrape(api), "ragchat_integration_syncs_running") == 1
    with trio.fail_after(30):
        while (await api.get(url)).json()["sync"]["status"] == "syncing":
            await trio.sleep(0.05)
    assert value(await scrape(api), "ragchat_integration_syncs_running") == 0


# ---------------------------------------------------------------- behind the API key


async def serve_keyed(service: Service, nursery, **settings: Any) -> httpx.AsyncClient:
    service.settings = attrs.evolve(service.settings, service_api_key=KEY, **settings)
    base_url, _ = await serve_service(service, nursery)
    return httpx.AsyncClient(base_url=base_url, timeout=30)


async def test_metrics_need_the_api_key_like_every_route(service, nursery):
    async with await serve_keyed(service, nursery) as client:
        refused = await client.get("/metrics")
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        assert (await client.get("/metrics", headers={"X-API-Key": "wrong"})).status_code == 401
        samples = await scrape(client, **{"X-API-Key": KEY})
    refusals = {"method": "GET", "route": "/metrics", "status": "401"}
    assert value(samples, "ragchat_http_requests_total", **refusals) >= 2
    assert KEY not in str(samples)


async def test_metrics_public_opens_metrics_only(service, nursery):
    async with await serve_keyed(service, nursery, metrics_public=True) as client:
        samples = await scrape(client)
        assert value(samples, "ragchat_http_requests_in_flight") >= 1
        assert (await client.get("/documents")).status_code == 401
        assert (await client.get("/usage")).status_code == 401
