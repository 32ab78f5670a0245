"""Token budgets through the real service: the ledger, caps under concurrency, GET /usage."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
import trio

from ragcore.usage import LIMIT_REACHED
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI

CAP = 1000
ALREADY_SPENT = 950
FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test", reply="It opens at 9 am [1]."))


@pytest.fixture
async def settings_overrides(fake: FakeOpenAI) -> dict[str, Any]:
    return on_openai(fake, usage_ledger="true", budget_daily_tokens=CAP)


def spend(database_url: str, tokens: int, role: str | None = None) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO usage_records (at, role, state, reserved_tokens, provider, model,
                                          prompt_tokens, completion_tokens)
               VALUES (%s, %s, 'settled', 0, 'openai', 'gpt-4o-mini', %s, 0)""",
            (datetime.now(UTC), role, tokens),
        )


def ledger_rows(database_url: str) -> list[tuple]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT state, provider, prompt_tokens, completion_tokens, estimated "
            "FROM usage_records ORDER BY id"
        ).fetchall()


async def test_every_answer_is_recorded_in_the_ledger(api, fake, database_url):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    response = await api.post("/chat", params={"question": "When does the shop open?"})
    body = response.json()
    assert body["answer"] == "It opens at 9 am [1]."
    assert body["usage"]["estimated"] is False
    [row] = ledger_rows(database_url)
    assert row[:2] == ("settled", "openai")
    assert (row[2], row[3]) == (body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"])
    assert row[2] > 0 and row[3] > 0


async def test_at_the_cap_the_answer_is_short_and_the_provider_is_not_called(
    api, fake, database_url
):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    spend(database_url, CAP)
    embeddings_before = len(fake.requests_to("/v1/embeddings"))
    response = await api.post("/chat", params={"question": "When does the shop open?"})
    assert response.status_code == 200
    assert response.json()["answer"] == LIMIT_REACHED
    assert response.json()["limited"] is True
    assert fake.requests_to("/v1/chat/completions") == []
    assert len(fake.requests_to("/v1/embeddings")) == embeddings_before


async def ask_at_once(api, count: int) -> list[dict]:
    replies: list[dict] = []

    async def ask() -> None:
        response = await api.post("/chat", params={"question": "When does the shop open?"})
        assert response.status_code == 200
        replies.append(response.json())

    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(ask)
    return replies


def settled(database_url: str) -> int:
    return sum(p + c for state, _, p, c, _ in ledger_rows(database_url) if state == "settled")


async def test_twenty_requests_at_once_against_a_nearly_spent_cap_never_pass_it(
    api, fake, database_url
):
    """50 tokens left cannot hold a prompt: nothing is asked of any provider, and the
    cap is not passed (the old rule let the first request through and overshot)."""
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    spend(database_url, ALREADY_SPENT)
    embeddings_before = len(fake.requests_to("/v1/embeddings"))
    replies = await ask_at_once(api, 20)
    assert all(r["limited"] and r["answer"] == LIMIT_REACHED for r in replies)
    assert fake.requests_to("/v1/chat/completions") == []
    assert len(fake.requests_to("/v1/embeddings")) == embeddings_before
    assert settled(database_url) == ALREADY_SPENT
    assert all(state == "settled" for state, *_ in ledger_rows(database_url))


async def test_a_small_cap_serves_what_fits_and_never_more(api, fake, database_url):
    """Twenty at once under a 1,000-token cap, each answer about 160 tokens by the
    provider's count: the calls in flight hold the cap for a moment, the others wait for
    them instead of being refused, and as many are answered as fit (the old hold of about
    4,500 tokens a request answered one); the ledger never passes the cap."""
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fake.delay = 0.2  # each answer is in flight while the others arrive
    replies = await ask_at_once(api, 20)
    answered = [r for r in replies if not r["limited"]]
    per_answer = max(
        r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in answered
    )
    assert len(answered) >= CAP // per_answer - 1  # what fits, give or take the last one
    assert settled(database_url) <= CAP
    assert len(fake.requests_to("/v1/chat/completions")) == len(answered)
    assert all(state == "settled" for state, *_ in ledger_rows(database_url))


async def test_an_answer_near_the_cap_is_asked_for_what_is_left(api, fake, database_url):
    """max_tokens is cut to what the cap leaves, so the provider cannot write past it."""
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    spend(database_url, CAP - 400)
    response = await api.post("/chat", params={"question": "When does the shop open?"})
    assert not response.json()["limited"]
    [call] = fake.requests_to("/v1/chat/completions")
    assert 32 <= call.body["max_tokens"] < 400
    assert settled(database_url) <= CAP


async def test_usage_summarises_by_day_month_role_and_provider(api, fake, database_url):
    spend(database_url, 300, role="sales")
    spend(database_url, 200, role=None)
    response = await api.get("/usage")
    body = response.json()
    today = datetime.now(UTC).date().isoformat()
    assert body["ledger"] is True
    assert body["today"] == {"tokens": 500, "cap": CAP}
    assert body["by_day"][-1]["day"] == today and body["by_day"][-1]["total_tokens"] == 500
    assert body["by_month"][-1]["month"] == today[:7]
    roles = {r["role"]: r["total_tokens"] for r in body["this_month_by_role"]}
    assert roles == {"sales": 300, None: 200}
    assert body["this_month_by_provider"][0]["provider"] == "openai"


@pytest.mark.parametrize("path", ["/chat", "/chat/stream"])
async def test_a_client_that_goes_away_gives_back_its_hold_at_once(api, fake, database_url, path):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fake.chat_delay = 30  # the model is slow; the client does not wait for it

    def held() -> int:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "SELECT count(*) FROM usage_records WHERE state = 'reserved'"
            ).fetchone()[0]

    with trio.move_on_after(1):
        await api.post(path, params={"question": "When does the shop open?"})
    assert len(fake.requests_to("/v1/chat/completions")) == 1  # it was being answered
    with trio.fail_after(5):  # released once the server sees the client gone
        while held():
            await trio.sleep(0.05)
    assert (await api.get("/usage")).json()["today"]["tokens"] == 0
