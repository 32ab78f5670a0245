"""GET /status against the real app: what an owner sees of a service with no provider
key, and of one answering with OpenAI (a fake speaking its wire format) whose calls
succeed and fail; behind the API key, and with no setting's secret value in it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ragcore.settings import SETTINGS
from ragio.providers.last_calls import LAST_CALLS
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI

KEY = "the-status-key"
REFUNDS = "# Returns\n\nItems can be returned within 30 days of delivery for a full refund."
QUESTION = {"question": "How long do I have to return an item?"}


@pytest.fixture(autouse=True)
def no_calls_yet() -> None:
    """The last calls are this process's: those of earlier tests' services go."""
    LAST_CALLS.clear()


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"service_api_key": KEY}


async def status_of(api: httpx.AsyncClient) -> dict[str, Any]:
    response = await api.get("/status", headers={"X-API-Key": KEY})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def recent(at: str) -> bool:
    return abs(datetime.fromisoformat(at) - datetime.now(UTC)) < timedelta(minutes=1)


async def test_status_needs_the_api_key(api):
    response = await api.get("/status")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    wrong = await api.get("/status", headers={"X-API-Key": "not-the-key"})
    assert wrong.status_code == 401


async def test_without_a_provider_key_answering_is_missing_and_the_service_answers_offline(api):
    body = await status_of(api)
    items = body["items"]
    answering = items["answering"]
    assert answering["state"] == "missing"
    assert answering["provider"] == {"name": "extractive", "model": "extractive"}
    assert "offline" in answering["summary"] and "still answers" in answering["summary"]
    for key in ("GENAI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        assert key in answering["next_step"]
    assert answering["last_calls"] == []
    knowledge = items["knowledge"]
    assert (knowledge["state"], knowledge["documents"], knowledge["chunks"]) == ("missing", 0, 0)
    assert "POST /documents" in knowledge["next_step"]
    assert knowledge["embedder"]["name"] == "local"
    assert items["database"]["state"] == "ok"
    assert items["database"]["database"] == {"reachable": True, "embedded": False}
    for off in ("telegram", "whatsapp", "discord", "widget", "voice", "graph", "budgets"):
        assert items[off]["state"] == "off", off
        assert items[off]["next_step"], off  # how to turn it on
    assert items["data_sources"]["state"] == items["websites"]["state"] == "off"
    assert body["state"] == "missing"
    assert recent(body["checked_at"])

    added = await api.post(
        "/documents", json={"name": "returns.md", "text": REFUNDS}, headers={"X-API-Key": KEY}
    )
    assert added.status_code == 201, added.text
    answered = await api.post("/chat", json=QUESTION, headers={"X-API-Key": KEY})
    assert answered.status_code == 200, answered.text

    items = (await status_of(api))["items"]
    knowledge = items["knowledge"]
    assert (knowledge["state"], knowledge["documents"], knowledge["next_step"]) == ("ok", 1, None)
    assert knowledge["chunks"] >= 1
    assert knowledge["last_call"]["provider"] == "local"
    assert knowledge["last_call"]["outcome"] == "ok"
    answering = items["answering"]
    assert answering["state"] == "missing"  # answered, offline: still no model
    [call] = answering["last_calls"]
    assert (call["provider"], call["task"], call["outcome"]) == ("extractive", "answer", "ok")
    assert recent(call["at"])


@pytest.fixture
async def gpt(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI("sk-status-openai-secret", reply="Within 30 days [1]."))


#: a value for every secret setting the test service can start with (DATABASE_URL is the
#: test database's; GENAI_API_KEY is present but LLM_PROVIDER chooses openai)
SECRETS = {
    "genai_api_key": "genai-status-secret",
    "anthropic_api_key": "sk-ant-status-secret",
    "graph_password": "graph-status-secret",
    "postgres_password": "PgStatusSecret1",
    "addon_encryption_key": "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
    "addon_encryption_key_previous": "3RVh0b8m9HxE5X2Yw1f4l7Q0cJ6kP9sT2uV5yZ8aB1c=",
    "webhook_targets": "crm=https://hooks.example.com/status-target-token",
    "chatops_webhook_url": "https://chat.example.com/hooks/status-chatops-token",
    "smtp_password": "smtp-status-secret",
    "workflow_signing_secret": "workflow-status-signing-secret",
    "telegram_bot_token": "123456:status-telegram-token-0123456789",
    "telegram_webhook_secret": "status-telegram-webhook-secret",
    "telco_account_sid": "ACstatus",
    "telco_auth_token": "telco-status-secret",
    "discord_bot_token": "discord-status-secret",
    "voiceai_api_key": "voiceai-status-secret",
}


class TestWithAProvider:
    """OPENAI_API_KEY set (a fake OpenAI server), the offline answerer as the fallback."""

    @pytest.fixture
    def settings_overrides(self, gpt: FakeOpenAI) -> dict[str, Any]:
        return on_openai(
            gpt,
            service_api_key=KEY,
            llm_provider="openai",
            embedding_provider="local",  # the knowledge base stays offline: only answers fail
            llm_fallback_providers="extractive",
            provider_timeout_seconds=5,
            **SECRETS,
        )

    async def ask(self, api: httpx.AsyncClient) -> dict[str, Any]:
        answered = await api.post("/chat", json=QUESTION, headers={"X-API-Key": KEY})
        assert answered.status_code == 200, answered.text
        body: dict[str, Any] = answered.json()
        return body

    async def test_the_last_call_shows_how_it_ended(self, api, gpt):
        added = await api.post(
            "/documents", json={"name": "returns.md", "text": REFUNDS}, headers={"X-API-Key": KEY}
        )
        assert added.status_code == 201, added.text
        answering = (await status_of(api))["items"]["answering"]
        assert answering["state"] == "ok"
        assert answering["provider"] == {"name": "openai", "model": "gpt-4o-mini"}
        assert answering["fallbacks"] == [{"name": "extractive", "model": "extractive"}]
        assert answering["last_calls"] == [] and "No call yet" in answering["summary"]

        assert (await self.ask(api))["provider"] == "openai"
        answering = (await status_of(api))["items"]["answering"]
        assert (answering["state"], answering["next_step"]) == ("ok", None)
        [call] = answering["last_calls"]
        assert (call["provider"], call["outcome"], call["http_status"]) == ("openai", "ok", None)
        assert recent(call["at"])

        gpt.fail_next(503, retry_after="0.01", times=3)  # outlasts the SDK's two retries
        assert (await self.ask(api))["provider"] == "extractive"
        answering = (await status_of(api))["items"]["answering"]
        assert answering["state"] == "failing"
        failed, rescued = answering["last_calls"]
        assert (failed["provider"], failed["outcome"], failed["http_status"]) == (
            "openai",
            "unavailable",
            503,
        )
        assert (rescued["provider"], rescued["outcome"]) == ("extractive", "ok")
        assert "extractive answered instead" in answering["summary"]
        assert "OPENAI_BASE_URL" in answering["next_step"]

        gpt.fail_next(401)  # a key the provider refuses
        assert (await self.ask(api))["provider"] == "extractive"
        answering = (await status_of(api))["items"]["answering"]
        assert answering["state"] == "failing"
        assert answering["last_calls"][0]["outcome"] == "bad_key"
        assert "OPENAI_API_KEY" in answering["next_step"]

        assert (await self.ask(api))["provider"] == "openai"  # back
        body = await status_of(api)
        assert body["items"]["answering"]["state"] == "ok"

    async def test_the_channels_show_what_is_set_and_no_secret_is_shown(self, api, service):
        response = await api.get("/status", headers={"X-API-Key": KEY})
        assert response.status_code == 200, response.text
        items = response.json()["items"]
        assert items["telegram"]["state"] == "ok"
        assert items["telegram"]["configured"] and items["telegram"]["verified"]
        assert items["whatsapp"]["state"] == "ok"
        assert items["discord"]["state"] == "missing"  # a bot token, but no public key
        assert "DISCORD_PUBLIC_KEY" in items["discord"]["next_step"]
        assert items["voice"]["state"] == "ok"

        settings = service.settings
        shown = response.text
        for setting in (s for s in SETTINGS if s.secret):
            value = getattr(settings, setting.field)
            values = [url for _, url in value] if isinstance(value, tuple) else [value]
            for secret in filter(None, values):
                assert secret not in shown, f"{setting.name}'s value is in GET /status"
        assert settings.database_url and settings.openai_api_key  # both were looked for
