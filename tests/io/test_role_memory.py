"""Role memory through the real HTTP API: adding, listing, searching by meaning and by
tags, duplicates, deleting, the starter seeds, the role context and /chat injecting it."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ragcore.employees.builtin import BUILT_IN
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_http_errors import assert_problem

HELPER = {"display_name": "Bike Shop Helper", "personality": "You help at the bike shop."}
REFUND = "Customers get their money back within 30 days if they return the bike unused."
GREETING = "Greet every visitor warmly and call them by their first name."


async def make_helper(api) -> None:
    assert (await api.patch("/employees/bike-helper", json=HELPER)).status_code == 201


async def add(api, text: str, role: str = "bike-helper", **fields: Any) -> dict[str, Any]:
    response = await api.post(f"/employees/{role}/memory", json={"text": text, **fields})
    assert response.status_code == 201, response.text
    return response.json()


async def test_add_then_list(api):
    await make_helper(api)
    created = await add(api, REFUND, tags=["refunds", "policy"], importance=5)
    assert created["text"] == REFUND and created["tags"] == ["refunds", "policy"]
    assert (created["source"], created["importance"]) == ("owner", 5)
    listed = (await api.get("/employees/bike-helper/memory")).json()
    assert [m["id"] for m in listed["memory"]] == [created["id"]]


async def test_search_by_meaning_puts_the_nearer_memory_first(api):
    await make_helper(api)
    refund = await add(api, REFUND)
    greeting = await add(api, GREETING)
    for query, nearest in [
        ("Can I have a refund for my bicycle?", refund),
        ("How should I say hello to people who come in?", greeting),
    ]:
        response = await api.get("/employees/bike-helper/memory", params={"query": query})
        assert response.status_code == 200, response.text
        found = response.json()["memory"]
        assert found[0]["id"] == nearest["id"], query
        assert found[0]["similarity"] > found[1]["similarity"]


async def test_search_by_tags_alone_and_with_a_query(api):
    await make_helper(api)
    refund = await add(api, REFUND, tags=["refunds"])
    greeting = await add(api, GREETING, tags=["tone"])
    await add(api, "Opening hours are 9 to 6.", tags=["hours"])
    tagged = await api.get("/employees/bike-helper/memory", params={"tags": "refunds,tone"})
    assert {m["id"] for m in tagged.json()["memory"]} == {refund["id"], greeting["id"]}
    both = await api.get(
        "/employees/bike-helper/memory", params={"tags": "tone,hours", "query": "money back"}
    )
    assert [m["tags"] for m in both.json()["memory"]] in (
        [["tone"], ["hours"]],
        [["hours"], ["tone"]],
    )
    assert refund["id"] not in {m["id"] for m in both.json()["memory"]}


async def test_the_same_text_in_other_case_and_spacing_is_a_409(api, database_url):
    await make_helper(api)
    first = await add(api, REFUND)
    again = await api.post(
        "/employees/bike-helper/memory", json={"text": "  " + REFUND.upper().replace(" ", "   ")}
    )
    body = assert_problem(again, 409, "already remembers")
    assert body["existing_id"] == first["id"]
    with psycopg.connect(database_url) as conn:
        count = conn.execute("SELECT count(*) FROM role_memory WHERE role = 'bike-helper'")
        assert count.fetchone()[0] == 1
    # another role may remember the same text
    await add(api, REFUND, role="support")


async def test_delete_and_the_404s(api):
    await make_helper(api)
    created = await add(api, REFUND)
    url = f"/employees/bike-helper/memory/{created['id']}"
    assert (await api.delete(url)).status_code == 204
    assert (await api.get("/employees/bike-helper/memory")).json()["memory"] == []
    assert_problem(await api.delete(url), 404, str(created["id"]))
    assert_problem(await api.delete("/employees/bike-helper/memory/abc"), 404)
    assert_problem(await api.get("/employees/pirate/memory"), 404, "pirate")
    assert_problem(await api.post("/employees/pirate/memory", json={"text": "x"}), 404)
    assert_problem(await api.delete("/employees/pirate/memory/1"), 404)
    assert_problem(await api.get("/employees/pirate/context", params={"query": "x"}), 404)


async def test_bad_bodies_are_422_and_nothing_is_stored(api):
    await make_helper(api)
    body = assert_problem(
        await api.post("/employees/bike-helper/memory", json={"text": "x", "mood": "sad"}), 422
    )
    assert "mood" in body["detail"]
    assert_problem(
        await api.post("/employees/bike-helper/memory", json={"text": "x", "source": "rumour"}),
        422,
    )
    assert_problem(await api.get("/employees/bike-helper/context"), 422, "query")
    assert (await api.get("/employees/bike-helper/memory")).json()["memory"] == []


async def test_the_built_in_roles_starter_seeds_are_stored_once(api, database_url):
    await api.get("/employees")
    memory = (await api.get("/employees/sales/memory")).json()["memory"]
    assert [m["text"] for m in memory] == list(BUILT_IN["sales"].memory_seeds)
    assert {m["source"] for m in memory} == {"owner"}
    # a deleted seed does not come back when the roles are listed again
    assert (await api.delete(f"/employees/sales/memory/{memory[0]['id']}")).status_code == 204
    await api.get("/employees")
    again = (await api.get("/employees/sales/memory")).json()["memory"]
    assert len(again) == len(memory) - 1
    with psycopg.connect(database_url) as conn:
        total = conn.execute("SELECT count(*) FROM role_memory").fetchone()[0]
    assert total == sum(len(r.memory_seeds) for r in BUILT_IN.values()) - 1


async def test_the_context_orders_owner_profile_learned_within_its_budget(api):
    await make_helper(api)
    await add(api, "Learned: customers often ask about refunds; cite the refund policy.",
              source="learned")  # fmt: skip
    await add(api, "Learned: people ask about tyre sizes.", source="learned")
    await add(api, "We are a family bike shop in Utrecht.", source="profile")
    await add(api, "Never promise a delivery date.", importance=2)
    await add(api, "Always answer in a friendly tone.", importance=5)
    response = await api.get(
        "/employees/bike-helper/context", params={"query": "Can I get a refund?"}
    )
    assert response.status_code == 200, response.text
    context = response.json()
    assert [i["source"] for i in context["items"]] == [
        "owner", "owner", "profile", "learned", "learned",
    ]  # fmt: skip
    assert context["items"][0]["text"] == "Always answer in a friendly tone."
    assert "refunds" in context["items"][3]["text"]  # the most relevant learned pattern first
    text = context["text"]
    assert text.startswith("Owner instructions:\n- Always answer in a friendly tone.")
    assert text.index("Business profile:") < text.index("Learned patterns:")
    assert context["chars"] == len(text) <= context["budget_chars"] == 2000
    # filled past the budget: the learned patterns go first, owner instructions stay
    for n in range(6):
        await add(api, f"Learned pattern {n}: " + "detail " * 60, source="learned")
    for n in range(2):
        await add(api, f"Owner rule {n}: " + "careful " * 60)
    full = (await api.get("/employees/bike-helper/context", params={"query": "refund"})).json()
    assert len(full["text"]) <= 2000 and full["dropped"] > 0
    sources = [i["source"] for i in full["items"]]
    assert sources.count("owner") == 4 and sources == sorted(
        sources, key=["owner", "profile", "learned"].index
    )
    assert sources.count("learned") < 8


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test", reply="It opens at 9 am [1]."))


class TestChatInjectsTheContext:
    @pytest.fixture
    async def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return on_openai(fake)

    async def test_chat_as_a_role_sends_the_context_text_in_the_prompt(self, api, fake):
        faq = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."
        await api.post("/documents", json={"name": "faq.md", "text": faq})
        await add(api, "Mention that we are closed on public holidays.", role="secretary")
        question = "When does the shop open?"
        context = (await api.get("/employees/secretary/context", params={"query": question})).json()
        assert "Mention that we are closed on public holidays." in context["text"]
        assert BUILT_IN["secretary"].memory_seeds[0] in context["text"]  # the seeds count
        response = await api.post("/chat", params={"question": question, "role": "secretary"})
        assert response.status_code == 200, response.text
        [chat] = fake.requests_to("/v1/chat/completions")
        system = chat.body["messages"][0]["content"]
        assert f"<role_context>\n{context['text']}\n</role_context>" in system
