"""Channel ``web`` (the chat widget's conversations) over the real HTTP app: its
conversations are listed with ?channel=web and rated like any other, a workflow may
follow it, the customer-facing roles answer on it, live-data actions may run on it (as
the served schema says), and the owner cannot be asked to approve there."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ragcore.chat.history import TurnRecord
from ragio.chat.conversations import record_turn
from tests.io.test_http_errors import assert_problem

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


async def test_a_widget_conversation_is_listed_on_web_alone_and_may_be_rated(api, service):
    await api.post("/chat", json={"question": "When do you open?"})
    visitor = TurnRecord("web", None, "Where is my order?", "It shipped. [1]", "answered")
    web = (await service.database.run(record_turn, visitor, NOW, 0)).conversation_id

    listed = await api.get("/conversations", params={"channel": "web"})
    assert listed.status_code == 200, listed.text
    assert [(c["id"], c["channel"]) for c in listed.json()["conversations"]] == [(web, "web")]
    chat = (await api.get("/conversations", params={"channel": "chat"})).json()
    assert web not in [c["id"] for c in chat["conversations"]]
    assert_problem(await api.get("/conversations", params={"channel": "widget"}), 422, "web")

    rated = await api.post(f"/conversations/{web}/turns/1/feedback", json={"rating": "down"})
    assert rated.status_code == 204, rated.text
    [turn] = (await api.get(f"/conversations/{web}")).json()["turns"]
    assert turn["feedback"] == "down"


async def test_a_workflow_may_follow_web(api):
    body = {
        "name": "Website leads",
        "webhook_url": "https://hooks.example.com/1",
        "channels": ["web"],
    }
    created = await api.post("/automation-workflows", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["channels"] == ["web"]
    listed = (await api.get("/automation-workflows", params={"channel": "web"})).json()
    assert [w["name"] for w in listed["workflows"]] == ["Website leads"]
    assert_problem(
        await api.post("/automation-workflows", json={**body, "channels": ["voice"]}), 422, "web"
    )


async def test_the_customer_facing_roles_answer_on_web(api):
    employees = (await api.get("/employees")).json()["employees"]
    on_web = [e["identifier"] for e in employees if "web" in e["channels"]]
    assert on_web == ["secretary", "sales", "support"]


async def test_the_owner_is_never_asked_to_approve_on_web(api):
    body = {"approval_channel": "web", "approval_target": "owner"}
    assert_problem(await api.post("/autonomy", json=body), 422, "telegram, whatsapp, discord")


def _enums(node: Any) -> Iterator[list[Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield node["enum"]
        for value in node.values():
            yield from _enums(value)
    elif isinstance(node, list):
        for value in node:
            yield from _enums(value)


async def test_every_list_of_channels_in_the_served_schema_offers_web_but_the_owners(api):
    spec = (await api.get("/openapi.json")).json()
    channel_lists = [e for e in _enums(spec) if "discord" in e]
    without_web = {tuple(c for c in e if c) for e in channel_lists if "web" not in e}
    assert without_web == {("telegram", "whatsapp", "discord")}  # approval_channel alone
    with_web = [e for e in channel_lists if "web" in e]
    assert len(with_web) >= 3  # conversations, workflows, live actions
