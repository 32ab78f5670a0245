"""A hundred clients asking POST /chat at once, with providers that answer at once.

Every answer is a 200 with a cited answer, and nothing is logged as an error: the database
pool and its thread limiter, the provider client's connections and the conversation
records all hold under a burst. How many answers a second the service gives is measured
by ``scripts/bench_load.py``, not here (timings belong in benchmarks).
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
import trio

from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI

CLIENTS = 100
QUESTIONS_EACH = 2  # 200 answers in all: ~10 s on the 2 shared cores
REPLY = "According to the documents, here is the answer [1]."
DOCUMENTS = {
    "returns.md": "# Returns\n\nItems can be returned within 30 days of delivery for a full "
    "refund. Refunds reach the original payment method within 5 business days.",
    "shipping.md": "# Shipping\n\nWe ship to the European Union and the United Kingdom. "
    "Standard shipping takes 3 to 5 working days; express shipping arrives the next day.",
    "warranty.md": "# Warranty\n\nEvery product has a two year warranty against "
    "manufacturing defects. Send a photo of the defect to make a warranty claim.",
    "hours.md": "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm, Monday to "
    "Saturday. It is closed on Sundays.",
}
QUESTIONS = (
    "How many days do I have to return an item?",
    "When will my refund arrive?",
    "How long does standard shipping take?",
    "Do you ship to the United Kingdom?",
    "How long is the warranty?",
    "How do I make a warranty claim?",
    "When does the shop open?",
    "Is the shop open on Sundays?",
)


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test-key", reply=REPLY))


@pytest.fixture
def settings_overrides(fake: FakeOpenAI) -> dict[str, Any]:
    return on_openai(fake)


async def test_a_hundred_clients_at_once_each_get_a_cited_answer_and_no_error_is_logged(
    api: httpx.AsyncClient, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
):
    for name, text in DOCUMENTS.items():
        added = await api.post("/documents", json={"name": name, "text": text})
        assert added.status_code == 201, added.text
    caplog.set_level(logging.WARNING)
    answers: list[httpx.Response] = []

    async def ask(number: int) -> None:
        # a client (and connection) each, as 100 users would be: one shared httpx pool
        # spends time quadratic in its connections looking for a free one
        async with httpx.AsyncClient(base_url=api.base_url, timeout=60) as client:
            for turn in range(QUESTIONS_EACH):
                question = QUESTIONS[(number + turn) % len(QUESTIONS)]
                answers.append(await client.post("/chat", json={"question": question}))

    async with trio.open_nursery() as nursery:
        for number in range(CLIENTS):
            nursery.start_soon(ask, number)

    assert len(answers) == CLIENTS * QUESTIONS_EACH
    for response in answers:
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["answer"] == REPLY, body
        assert body["citations"] and body["citations"][0]["number"] == 1, body
        assert body["provider"] == "openai"
    asked = [r.body["messages"][1]["content"] for r in fake.requests_to("/v1/chat/completions")]
    assert len(asked) == CLIENTS * QUESTIONS_EACH
    recorded = {response.json()["conversation_id"] for response in answers}
    assert len(recorded) == CLIENTS * QUESTIONS_EACH  # every turn recorded, each its own
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not problems, [r.getMessage() for r in problems]
