"""OpenTelemetry traces (issue 37): the real service sends its spans over OTLP/HTTP to a
local receiver that decodes them with opentelemetry-proto, as a collector does. A
``/chat`` answer and a streamed ``/v1`` answer are each one trace: the request's server
span, a span per effect the runner executed, a client span per provider call under the
model's effect with the GenAI conventions' attributes; a failure's kind and the trace's
id reach the span, the problem and the log line; no key or secret reaches any of them.
(A call's turn is traced in tests/io/test_voice_calls.py.)"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
import trio

from ragio.logs import JsonFormatter, TextFormatter
from ragio.service import Service
from ragio.tracing import TraceIds
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.otlp_receiver import OTLPReceiver, ReceivedSpan

KEY = "owner-key-for-traces-0123456789"
COLLECTOR_TOKEN = "collector-secret-token-42"
SERVER, CLIENT = 2, 3  # the protobuf's SpanKind
ERROR = 2  # the protobuf's Status.StatusCode
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."


@pytest.fixture
async def receiver(serve_fake) -> OTLPReceiver:
    return await serve_fake(OTLPReceiver())


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-trace-test-key", reply="At 9 am [1]."))


@pytest.fixture
async def settings_overrides(fake: FakeOpenAI, receiver: OTLPReceiver) -> dict[str, Any]:
    return on_openai(
        fake,
        service_api_key=KEY,
        otel_exporter_otlp_endpoint=receiver.base_url,
        otel_exporter_otlp_headers=f"authorization=Bearer%20{COLLECTOR_TOKEN}",
        otel_service_name="shop-assistant",
        max_retries=0,
    )


async def sent(service: Service, receiver: OTLPReceiver) -> list[ReceivedSpan]:
    """Every span received once the service has sent what it ended (the exporter posts
    from its own thread to the receiver served by this test's loop)."""
    assert await trio.to_thread.run_sync(service.tracing.flush)
    return receiver.spans()


def tree(spans: list[ReceivedSpan], root: ReceivedSpan) -> dict[str, Any]:
    """The spans under ``root`` by name (a name met twice: a list), for the asserts."""
    shape: dict[str, Any] = {}
    for child in sorted(spans, key=lambda s: s.start_ns):
        if child.parent_id == root.span_id:
            shape.setdefault(child.name, []).append(tree(spans, child))
    return shape


def one_trace(spans: list[ReceivedSpan], name: str) -> tuple[ReceivedSpan, list[ReceivedSpan]]:
    [root] = [s for s in spans if s.name == name and s.kind == SERVER]
    return root, [s for s in spans if s.trace_id == root.trace_id]


def secrets_in(texts: list[str], *secrets: str) -> list[str]:
    return [secret for secret in secrets if any(secret in text for text in texts)]


async def test_a_chat_answer_is_one_trace_with_a_span_per_effect_and_per_provider_call(
    api: httpx.AsyncClient, service: Service, receiver: OTLPReceiver, fake: FakeOpenAI
) -> None:
    owner = {"X-API-Key": KEY}
    added = await api.post("/documents", json={"name": "faq.md", "text": FAQ}, headers=owner)
    assert added.status_code == 201
    made = await api.post("/keys", json={"name": "site", "scopes": ["chat"]}, headers=owner)
    site_key = made.json()["key"]  # asked with a key of its own: it must not show either
    asked = await api.post(
        "/chat",
        json={"question": "When does the shop open?"},
        headers={"X-API-Key": site_key, "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"},
    )
    assert asked.status_code == 200
    body = asked.json()
    spans = await sent(service, receiver)
    root, traced = one_trace(spans, "POST /chat")
    # the client's trace goes on: its id, under its span
    assert (root.trace_id, root.parent_id) == (CLIENT_TRACE, CLIENT_SPAN)
    assert root.attributes["http.route"] == "/chat"
    assert root.attributes["http.response.status_code"] == 200
    assert root.resource["service.name"] == "shop-assistant"
    shape = tree(traced, root)
    for effect in ("load_conversation", "embed", "search_chunks", "generate", "record_turn"):
        assert effect in shape, sorted(shape)
    # the question's embedding and the answer: each provider call a client span
    [embedded] = shape["embed"]
    assert any(name.startswith("embeddings ") for name in embedded)
    [generated] = shape["generate"]
    [call_name] = generated
    assert call_name == f"chat {body['model']}"
    [call] = [s for s in traced if s.name == call_name]
    assert call.kind == CLIENT
    assert call.attributes["gen_ai.operation.name"] == "chat"
    assert call.attributes["gen_ai.provider.name"] == "openai"
    assert call.attributes["gen_ai.request.model"] == body["model"]
    assert call.attributes["gen_ai.usage.input_tokens"] == body["usage"]["prompt_tokens"]
    assert call.attributes["gen_ai.usage.output_tokens"] == body["usage"]["completion_tokens"]
    # every span ended within the request's
    assert all(root.start_ns <= s.start_ns <= s.end_ns <= root.end_ns for s in traced)
    # the collector's token went with the export, as the header it is
    [export] = receiver.requests_to("/v1/traces")[:1]
    assert export.headers["authorization"] == f"Bearer {COLLECTOR_TOKEN}"
    texts = [asked.text, added.text] + [json.dumps(s.attributes) + s.name for s in spans]
    assert secrets_in(texts, KEY, site_key, fake.api_key, COLLECTOR_TOKEN) == []


async def test_a_streamed_v1_answer_is_traced_to_its_last_chunk(
    api: httpx.AsyncClient, service: Service, receiver: OTLPReceiver, fake: FakeOpenAI
) -> None:
    fake.word_delay = 0.02
    headers = {"Authorization": f"Bearer {KEY}"}
    added = await api.post("/documents", json={"name": "faq.md", "text": FAQ}, headers=headers)
    assert added.status_code == 201
    request = {
        "model": "ragchat",
        "stream": True,
        "messages": [{"role": "user", "content": "When does the shop open?"}],
    }
    chunks: list[str] = []
    async with api.stream("POST", "/v1/chat/completions", json=request, headers=headers) as sse:
        assert sse.status_code == 200
        async for line in sse.aiter_lines():
            if line.startswith("data: "):
                chunks.append(line)
    streamed_until = trio.current_time()
    assert chunks[-1] == "data: [DONE]"
    spans = await sent(service, receiver)
    root, traced = one_trace(spans, "POST /v1/chat/completions")
    assert root.attributes["http.response.status_code"] == 200
    shape = tree(traced, root)
    [generated] = shape["generate"]
    [call_name] = generated
    [call] = [s for s in traced if s.name == call_name]
    assert call.kind == CLIENT and call.attributes["gen_ai.usage.output_tokens"] > 0
    # the request's span ends after the provider's stream does
    assert root.end_ns >= call.end_ns and "record_turn" in shape
    assert streamed_until > 0
    texts = chunks + [json.dumps(s.attributes) + s.name for s in spans]
    assert secrets_in(texts, KEY, fake.api_key, COLLECTOR_TOKEN) == []


async def test_a_failed_answer_names_its_trace_in_the_problem_the_log_and_the_span(
    api: httpx.AsyncClient,
    service: Service,
    receiver: OTLPReceiver,
    fake: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.handler.addFilter(TraceIds())
    await api.post("/documents", json={"name": "faq.md", "text": FAQ}, headers={"X-API-Key": KEY})
    fake.fail_next(500, times=5)
    with caplog.at_level(logging.WARNING):
        failed = await api.post(
            "/chat", json={"question": "When does the shop open?"}, headers={"X-API-Key": KEY}
        )
    assert failed.status_code == 503
    problem = failed.json()
    trace_id = problem["trace_id"]
    assert len(trace_id) == 32
    spans = await sent(service, receiver)
    root, traced = one_trace(spans, "POST /chat")
    assert root.trace_id == trace_id
    # the provider's first call (the question's embedding) failed: its span says how,
    # by the failure's kind alone (never the provider's message)
    calls = [s for s in traced if s.kind == CLIENT]
    assert calls and all(c.status_code == ERROR for c in calls)
    assert {c.attributes["error.type"] for c in calls} == {"unavailable"}  # its 500
    assert all("message" not in name for c in calls for name in c.attributes)
    lines = [r for r in caplog.records if getattr(r, "trace_id", None) == trace_id]
    assert lines, [r.getMessage() for r in caplog.records]
    as_json = json.loads(JsonFormatter().format(lines[0]))
    assert as_json["trace_id"] == trace_id and len(as_json["span_id"]) == 16
    assert TextFormatter().format(lines[0]).endswith(f" trace_id={trace_id}")
    logged = [JsonFormatter().format(r) for r in caplog.records]
    texts = logged + [failed.text] + [json.dumps(s.attributes) for s in spans]
    assert secrets_in(texts, KEY, fake.api_key, COLLECTOR_TOKEN) == []


@pytest.mark.parametrize("settings_overrides", [{"service_api_key": KEY}])
async def test_untraced_the_service_sends_nothing_and_names_no_trace(
    service: Service, api: httpx.AsyncClient, receiver: OTLPReceiver
) -> None:
    """Without OTEL_EXPORTER_OTLP_ENDPOINT: no tracer, nothing sent, no trace id."""
    assert not service.tracing.on
    missing = await api.get("/documents/999", headers={"X-API-Key": KEY})
    assert missing.status_code == 404 and "trace_id" not in missing.json()
    assert await trio.to_thread.run_sync(service.tracing.flush)
    assert receiver.requests == []
