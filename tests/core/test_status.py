"""GET /status's rules (ragcore.api.status): each item's state, words and next step from
plain facts, with no service, database or clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

from ragcore.api.service import Database, Embedder, Graph, Provider
from ragcore.api.status import ProviderCall, StatusCounts, StatusFacts, status
from ragcore.chat.fallback import Attempt, FailureKind
from ragcore.converter import converter
from ragcore.settings import SETTINGS
from ragcore.usage import Totals
from tests.conftest import make_settings

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
BOT_TOKEN = "123456:ABC-status-token-0123456789"
EARLIER = NOW - timedelta(minutes=5)
LOCAL = Embedder("local", "all-MiniLM-L6-v2-onnx-int8", 384)
OFFLINE = [Provider("extractive", "extractive")]
OPENAI = [Provider("openai", "gpt-4o-mini"), Provider("extractive", "extractive")]
STOCKED = StatusCounts(documents=3, chunks=12)


def facts(
    chain: list[Provider] = OFFLINE,
    calls: dict[tuple[str, str], ProviderCall] | None = None,
    counts: StatusCounts | None = STOCKED,
    reachable: bool = True,
    embedded: bool = True,
    graph: Graph = Graph("off"),
    **settings: Any,
) -> StatusFacts:
    return StatusFacts(
        settings=make_settings(**settings),
        now=NOW,
        chain=chain,
        embedder=LOCAL,
        database=Database(reachable, embedded),
        graph=graph,
        calls=calls or {},
        counts=counts,
    )


def answered(provider: str, at: datetime = NOW, task: str = "answer") -> ProviderCall:
    return ProviderCall.of(provider, task, at, None)


def failed(
    provider: str, failure: FailureKind, at: datetime = NOW, status: int | None = None
) -> ProviderCall:
    return ProviderCall.of(provider, "answer", at, Attempt(provider, failure, status))


# ---------------------------------------------------------------- answering


def test_without_a_key_answering_is_missing_and_says_the_service_answers_offline():
    item = status(facts()).items.answering
    assert item.state == "missing"
    assert "still answers, offline" in item.summary
    for key in ("GENAI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        assert key in item.next_step


def test_an_offline_choice_made_in_llm_provider_says_so():
    item = status(facts(llm_provider="extractive", openai_api_key="sk-x")).items.answering
    assert item.state == "missing"
    assert item.next_step.startswith("LLM_PROVIDER=extractive keeps the answers offline")


def test_a_provider_not_called_yet_is_ok_and_its_fallbacks_are_named():
    item = status(facts(OPENAI, openai_api_key="sk-x")).items.answering
    assert (item.state, item.next_step) == ("ok", None)
    assert item.provider == Provider("openai", "gpt-4o-mini")
    assert item.fallbacks == [Provider("extractive", "extractive")]
    assert "No call yet" in item.summary and "Fallbacks, in order: extractive." in item.summary


def test_the_last_call_answered_is_ok_with_its_time():
    calls = {("answering", "openai"): answered("openai")}
    item = status(facts(OPENAI, calls, openai_api_key="sk-x")).items.answering
    assert item.state == "ok"
    assert item.last_calls == [calls["answering", "openai"]]
    assert "2026-11-28 12:00 UTC, answered" in item.summary


def test_a_failing_primary_is_failing_though_the_fallback_answered():
    calls = {
        ("answering", "openai"): failed("openai", FailureKind.UNAVAILABLE, EARLIER, 503),
        ("answering", "extractive"): answered("extractive"),
    }
    item = status(facts(OPENAI, calls, openai_api_key="sk-x")).items.answering
    assert item.state == "failing"
    assert [c.provider for c in item.last_calls] == ["openai", "extractive"]
    assert item.last_calls[0].outcome == "unavailable"
    assert item.last_calls[0].http_status == 503
    assert "openai unavailable (HTTP 503)" in item.summary
    assert "extractive answered instead" in item.summary
    assert "openai's status page" in item.next_step  # no OPENAI_BASE_URL: OpenAI itself


STEPS = {
    FailureKind.BAD_KEY: "check OPENAI_API_KEY",
    FailureKind.RATE_LIMITED: "LLM_FALLBACK_PROVIDERS",
    FailureKind.UNAVAILABLE: "the server at OPENAI_BASE_URL",
    FailureKind.TIMEOUT: "PROVIDER_TIMEOUT_SECONDS (60 s)",
    FailureKind.REJECTED: "OPENAI_CHAT_MODEL and MAX_OUTPUT_TOKENS",
    FailureKind.BAD_REPLY: "OPENAI_BASE_URL points at an OpenAI-compatible server",
}


@pytest.mark.parametrize("failure", list(FailureKind), ids=lambda f: f.value)
def test_the_next_step_after_a_failure_names_the_settings_to_check(failure):
    calls = {("answering", "openai"): failed("openai", failure)}
    settings = {"openai_api_key": "sk-x", "openai_base_url": "http://127.0.0.1:11434/v1"}
    item = status(facts(OPENAI, calls, **settings)).items.answering
    assert item.state == "failing"
    assert STEPS[failure] in item.next_step


# ---------------------------------------------------------------- knowledge


def test_no_documents_is_missing_with_how_to_upload_one():
    item = status(facts(counts=StatusCounts())).items.knowledge
    assert (item.state, item.documents, item.chunks) == ("missing", 0, 0)
    assert "POST /documents" in item.next_step and "ragchat ingest" in item.next_step


def test_documents_are_counted_with_the_embedder_that_made_them():
    item = status(facts()).items.knowledge
    assert (item.state, item.next_step) == ("ok", None)
    assert item.summary.startswith("3 documents in 12 chunks. Embedded by local")
    assert item.embedder == LOCAL


def test_a_key_that_prefers_another_embedder_is_said_without_a_step():
    item = status(facts(openai_api_key="sk-x")).items.knowledge
    assert item.state == "ok"
    assert "EMBEDDING_PROVIDER=openai and `ragchat reindex`" in item.summary


def test_a_failing_embedder_is_failing():
    call = ProviderCall.of("local", "embedding", NOW, Attempt("local", FailureKind.BAD_REPLY))
    item = status(facts(calls={("embedding", "local"): call})).items.knowledge
    assert item.state == "failing"
    assert item.last_call == call


# ---------------------------------------------------------------- channels


def test_channels_not_set_up_are_off_with_how_to_set_them_up():
    items = status(facts()).items
    assert items.telegram.state == items.whatsapp.state == items.discord.state == "off"
    assert "`ragchat telegram set-webhook`" in items.telegram.next_step
    assert "TELCO_ACCOUNT_SID" in items.whatsapp.next_step
    assert "`ragchat discord register-command`" in items.discord.next_step
    assert items.voice.state == "off" and "VOICEAI_API_KEY" in items.voice.next_step


def test_telegram_without_its_webhook_secret_refuses_every_update():
    item = status(facts(telegram_bot_token=BOT_TOKEN)).items.telegram
    assert (item.state, item.configured, item.verified) == ("missing", False, False)
    assert "every update is refused (403)" in item.summary
    assert item.next_step.startswith("Set TELEGRAM_WEBHOOK_SECRET,")


def test_telegram_set_up_says_when_the_last_message_came_in():
    counts = StatusCounts(last_messages={"telegram": EARLIER})
    settings = {"telegram_bot_token": BOT_TOKEN, "telegram_webhook_secret": "s"}
    item = status(facts(counts=counts, **settings)).items.telegram
    assert (item.state, item.configured, item.next_step) == ("ok", True, None)
    assert item.last_message_at == EARLIER
    assert "Last message 2026-11-28 11:55 UTC." in item.summary
    never = status(facts(counts=StatusCounts(), **settings)).items.telegram
    assert never.state == "ok" and "No message came in the last 30 days" in never.summary
    assert "`ragchat telegram set-webhook`" in never.next_step


@pytest.mark.parametrize(
    ("allowed", "channel"),
    [("telegram_allow_unsigned", "telegram"), ("whatsapp_allow_unsigned", "whatsapp")],
)
def test_a_channel_letting_unsigned_requests_in_is_missing_its_verification(allowed, channel):
    settings = {
        "telegram_bot_token": BOT_TOKEN,
        "telegram_webhook_secret": "s",
        "telco_account_sid": "AC1",
        "telco_auth_token": "t",
        allowed: "true",
    }
    item = getattr(status(facts(**settings)).items, channel)
    assert item.state == "missing"
    assert item.next_step.startswith(f"Set {allowed.upper()}=false")


def test_whatsapp_needs_the_auth_token_and_discord_its_public_key():
    items = status(facts(telco_account_sid="AC1", discord_bot_token="d")).items
    assert items.whatsapp.state == "missing"
    assert items.whatsapp.next_step == "Set TELCO_AUTH_TOKEN and restart the service."
    assert items.discord.state == "missing" and "DISCORD_PUBLIC_KEY" in items.discord.next_step


def test_the_widget_counts_its_sites():
    assert status(facts()).items.widget.state == "off"
    none_on = status(facts(counts=StatusCounts(widget_sites=2))).items.widget
    assert none_on.state == "off" and "`ragchat sites enable ID`" in none_on.next_step
    on = status(facts(counts=StatusCounts(widget_sites=2, enabled_widget_sites=1))).items.widget
    assert (on.state, on.summary) == ("ok", "1 of 2 sites enabled.")
    assert (on.sites, on.enabled_sites) == (2, 1)


def test_voice_says_where_its_server_runs():
    settings = {"voiceai_api_key": "v", "telco_auth_token": "t"}
    embedded = status(facts(**settings)).items.voice
    assert embedded.state == "ok" and "`ragchat serve` runs the voice server" in embedded.summary
    apart = status(facts(embedded=False, **settings)).items.voice
    assert "`ragchat voice`" in apart.summary
    unsigned = status(facts(voiceai_api_key="v")).items.voice
    assert unsigned.state == "missing" and "TELCO_AUTH_TOKEN" in unsigned.next_step
    exposed = status(facts(voiceai_api_key="v", voice_allow_unsigned="true", voice_bind="0.0.0.0"))
    assert exposed.items.voice.state == "missing"
    assert "VOICE_BIND=0.0.0.0" in exposed.items.voice.next_step


# ---------------------------------------------------------------- the rest


def test_the_graph_is_shown_as_health_shows_it():
    assert status(facts()).items.graph.state == "off"
    degraded = Graph("degraded", "neo4j", "Neo4j is unreachable")
    item = status(facts(graph=degraded)).items.graph
    assert (item.state, item.graph) == ("failing", degraded)
    assert "GRAPH_URI" in item.next_step
    assert status(facts(graph=Graph("ok", "postgres"))).items.graph.state == "ok"


def test_budgets_show_the_caps_and_what_was_spent():
    assert status(facts()).items.budgets.state == "off"
    ledger = {"usage_ledger": "true", "budget_daily_tokens": 100}
    spent = StatusCounts(totals=Totals(day=40, month=250))
    item = status(facts(counts=spent, **ledger)).items.budgets
    assert (item.state, item.summary) == ("ok", "Today 40 tokens of 100, this month 250 tokens.")
    assert (item.today.cap, item.this_month.cap) == (100, None)
    reached = StatusCounts(totals=Totals(day=100, month=250))
    item = status(facts(counts=reached, **ledger)).items.budgets
    assert item.state == "failing" and "BUDGET_DAILY_TOKENS" in item.next_step


def test_failing_syncs_and_crawls_are_named():
    counts = StatusCounts(data_sources=2, failing_data_sources=("crm",), websites=1)
    items = status(facts(counts=counts, addon_encryption_key=FERNET)).items
    assert items.data_sources.state == "failing" and items.data_sources.failing == ["crm"]
    assert "1 of 2 data sources: crm" in items.data_sources.summary
    assert items.websites.state == "ok"
    crawled = StatusCounts(websites=2, failing_websites=("shop",))
    assert status(facts(counts=crawled)).items.websites.failing == ["shop"]
    unreadable = status(facts(counts=StatusCounts(data_sources=1))).items.data_sources
    assert unreadable.state == "missing" and "ADDON_ENCRYPTION_KEY" in unreadable.next_step


def test_a_database_that_does_not_answer_fails_what_is_read_from_it():
    shown = status(facts(counts=None, reachable=False, embedded=False, usage_ledger="true"))
    items = shown.items
    assert items.database.state == "failing" and "DATABASE_URL" in items.database.next_step
    for name in ("knowledge", "widget", "budgets", "data_sources", "websites"):
        item = getattr(items, name)
        assert item.state == "failing" and "the database item" in item.next_step, name
    assert items.knowledge.documents is None and items.budgets.today is None
    assert "unknown" in items.telegram.summary or items.telegram.state == "off"
    assert shown.state == "failing"


def test_the_whole_is_failing_then_missing_then_ok():
    assert status(facts()).state == "missing"  # offline
    calls = {("answering", "openai"): failed("openai", FailureKind.TIMEOUT)}
    assert status(facts(OPENAI, calls, openai_api_key="sk-x")).state == "failing"
    assert status(facts(OPENAI, openai_api_key="sk-x")).state == "ok"  # the rest off or ok


FERNET = "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU="
SECRETS = {
    "service_api_key": "service-secret",
    "database_url": "postgresql://u:db-secret@db.example.com/ragchat",
    "postgres_password": "PgSecret1",
    "genai_api_key": "genai-secret",
    "openai_api_key": "openai-secret",
    "openai_base_url": "https://u:base-url-secret@llm.example.com/v1",
    "anthropic_api_key": "anthropic-secret",
    "graph_password": "graph-secret",
    "graph_uri": "bolt://graph.example.com:7687",
    "addon_encryption_key": FERNET,
    "webhook_targets": "crm=https://hooks.example.com/target-secret",
    "chatops_webhook_url": "https://chat.example.com/chatops-secret",
    "smtp_password": "smtp-secret",
    "workflow_signing_secret": "workflow-signing-secret",
    "telegram_bot_token": "123456:telegram-secret-0123456789",
    "telegram_webhook_secret": "webhook-secret",
    "telco_auth_token": "telco-secret",
    "telco_account_sid": "AC1",
    "discord_bot_token": "discord-secret",
    "voiceai_api_key": "voiceai-secret",
}


def test_no_item_says_a_settings_value():
    failing = {
        ("answering", "openai"): failed("openai", FailureKind.BAD_KEY, status=401),
        ("embedding", "openai"): failed("openai", FailureKind.REJECTED),
    }
    counts = StatusCounts(data_sources=1, failing_data_sources=("crm",))
    for down in (False, True):
        shown = status(
            attrs.evolve(
                facts(OPENAI, failing, counts, llm_provider="openai", **SECRETS),
                counts=None if down else counts,
                database=Database(not down, False),
            )
        )
        text = json.dumps(converter.unstructure(shown))
        settings = make_settings(**SECRETS)
        for setting in (s for s in SETTINGS if s.secret):
            value = getattr(settings, setting.field)
            for secret in [url for _, url in value] if isinstance(value, tuple) else [value]:
                assert not secret or secret not in text, setting.name
        assert "base-url-secret" not in text
