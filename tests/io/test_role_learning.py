"""Learning from past interactions through HTTP (ragcore.employees.learning): a question
many people ask becomes one learned pattern in the role's memory and context; one
chatty user teaches nothing and cannot flood the store."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
import trio

from ragcore.employees.learning import (
    PATTERN_TAG,
    Interaction,
    LearningPolicy,
    RecordInteraction,
    asker_hash,
)
from ragio.employees.learning import record
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_http_errors import assert_problem

FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."
QUESTION = "When does the shop open on weekdays?"


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test", reply="It opens at 9 am [1]."))


@pytest.fixture
def settings_overrides(fake: FakeOpenAI) -> dict[str, Any]:
    return on_openai(fake)


@pytest.fixture
async def faq(api) -> None:
    assert (await api.post("/documents", json={"name": "faq.md", "text": FAQ})).status_code == 201


async def ask(api, question: str = QUESTION, **params: str) -> dict[str, Any]:
    response = await api.post("/chat", params={"question": question, "role": "support", **params})
    assert response.status_code == 200, response.text
    return response.json()


async def learned(api, role: str = "support") -> list[dict[str, Any]]:
    response = await api.get(f"/employees/{role}/memory", params={"tags": PATTERN_TAG})
    assert response.status_code == 200, response.text
    return response.json()["memory"]


async def test_a_question_three_people_ask_is_learned_once(api, faq):
    await ask(api, user="ann")
    await ask(api, "When does the shop open on weekdays please?", user="bob")
    assert await learned(api) == []  # two people: not yet a pattern
    await ask(api, user="cy")
    [pattern] = await learned(api)
    assert pattern["source"] == "learned" and pattern["tags"] == [PATTERN_TAG]
    assert pattern["text"] == f'People often ask: "{QUESTION}". It is answered in: faq.md.'
    for user in ("dee", "eve", "ann"):  # asked again and again: still one pattern
        await ask(api, user=user)
    assert [p["id"] for p in await learned(api)] == [pattern["id"]]
    context = (await api.get("/employees/support/context", params={"query": QUESTION})).json()
    assert f"Learned patterns:\n- {pattern['text']}" in context["text"]


async def test_one_chatty_user_teaches_nothing_and_is_recorded_a_bounded_number_of_times(
    api, faq, database_url
):
    for _ in range(23):
        await ask(api, user="chatty")
    await ask(api)  # and anonymous requests are all one asker
    await ask(api)
    assert await learned(api) == []
    with psycopg.connect(database_url) as conn:
        per_asker = conn.execute(
            "SELECT count(*) FROM role_interactions GROUP BY asker_hash ORDER BY 1 DESC"
        ).fetchall()
        stored = conn.execute("SELECT asker_hash FROM role_interactions").fetchall()
    assert [n for (n,) in per_asker] == [20, 2]  # 20 a day per asker, the rest not recorded
    assert all("chatty" not in h for (h,) in stored)


async def test_an_askers_questions_recorded_at_once_stay_within_the_daily_limit(
    api, service, database_url
):
    """Recorded by many connections at once (requests in this and other processes, see
    tests/io/test_replicas.py), one asker still gets 20 a day: each is counted against
    those recorded before it, under the role's lock."""
    await api.get("/employees/support")  # the built-in roles stored
    policy = LearningPolicy()
    asked = RecordInteraction(
        Interaction("support", asker_hash("chatty"), QUESTION, (1.0,) + (0.0,) * 63, ("faq.md",)),
        policy,
    )
    histories = []

    async def one() -> None:
        histories.append(await service.database.run(record, asked, service.clock.now()))

    async with trio.open_nursery() as nursery:
        for _ in range(30):
            nursery.start_soon(one)
    assert sum(h.recorded for h in histories) == policy.per_asker_daily
    with psycopg.connect(database_url) as conn:
        [(stored,)] = conn.execute("SELECT count(*) FROM role_interactions").fetchall()
    assert stored == policy.per_asker_daily


async def test_learning_is_per_role_and_needs_a_cited_answer(api, faq, fake):
    for user in ("ann", "bob", "cy"):
        await api.post("/chat", params={"question": QUESTION, "user": user})  # no role
    assert await learned(api) == []
    fake.reply = "I cannot say."  # no citation: nothing grounded to learn from
    for user in ("ann", "bob", "cy"):
        await ask(api, user=user)
    assert await learned(api) == []
    fake.reply = "It opens at 9 am [1]."
    for user in ("ann", "bob", "cy"):
        await api.post("/chat", params={"question": QUESTION, "role": "sales", "user": user})
    assert len(await learned(api, "sales")) == 1 and await learned(api) == []


async def test_a_deleted_pattern_comes_back_only_when_people_ask_again(api, faq):
    for user in ("ann", "bob", "cy"):
        await ask(api, user=user)
    [pattern] = await learned(api)
    deleted = await api.delete(f"/employees/support/memory/{pattern['id']}")
    assert deleted.status_code == 204
    await ask(api, user="dee")
    assert await learned(api) == []  # the three who taught it no longer count
    for user in ("eve", "fay"):
        await ask(api, user=user)
    assert len(await learned(api)) == 1


@pytest.mark.parametrize(
    "user, message", [("x" * 129, "the limit is 128"), ("   ", "must be text"), (7, "must be text")]
)
async def test_a_bad_user_is_422(api, user, message):
    response = await api.post("/chat", json={"question": QUESTION, "role": "support", "user": user})
    assert_problem(response, 422, message)
    assert response.json().get("field", "user") == "user"
