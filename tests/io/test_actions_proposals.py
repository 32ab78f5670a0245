"""A role's reply proposing an action, end to end through the real runner: a fake OpenAI
model on 127.0.0.1 writes the proposal, the database keeps it, the owner is messaged,
and in ``full`` the chat-ops receiver gets it. A customer never sees the block."""

from __future__ import annotations

import pytest

from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragio.employees.lookup import stored_role
from ragio.runner import run
from tests.io.actions import set_autonomy
from tests.io.channels import QUESTION, REPLY, add_refunds, system_prompts
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.telegram_server import FakeTelegram

TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
BLOCK = '<action>{"kind": "chatops", "text": "Ann wants to return order 1234"}</action>'


@pytest.fixture
async def openai(serve_fake):
    return await serve_fake(FakeOpenAI(reply=f"{REPLY}\n{BLOCK}"))


@pytest.fixture
async def telegram(serve_fake):
    return await serve_fake(FakeTelegram(TOKEN))


@pytest.fixture
def settings_overrides(openai, chatops, telegram, authority):
    return on_openai(
        openai,
        chatops_webhook_url=f"{chatops.base_url}/hook",
        actions_ca_bundle=str(authority.bundle),
        actions_allow_private_targets="true",
        telegram_bot_token=TOKEN,
        telegram_api_base_url=telegram.base_url,
    )


async def ask(service, api, origin="telegram", role="support"):
    await add_refunds(api)
    await api.get("/employees")  # seeds the roles
    employee = await stored_role(service.database, role)
    request = ChatRequest(QUESTION, employee=employee, origin=origin)
    return await run(answer_question(request, ChatPolicy.from_settings(service.settings)), service)


async def test_a_proposal_in_a_customer_conversation_waits_for_the_owner(
    service, api, openai, chatops, telegram
):
    await set_autonomy(api, mode="semi", approval_channel="telegram", approval_target="4242")
    answer = await ask(service, api)
    assert answer.answer == REPLY  # the block is never shown to the customer
    assert answer.action.status == "pending" and answer.action.kind == "chatops"
    [prompt] = system_prompts(openai)
    assert "Outbound actions" in prompt and chatops.base_url not in prompt
    assert chatops.requests == []
    [owner] = telegram.sent
    assert "customer conversation on telegram" in owner["text"]
    assert f"YES {answer.action.id}" in owner["text"]
    action = (await api.get(f"/actions/{answer.action.id}")).json()
    assert action["origin"] == "telegram" and action["role"] == "support"
    assert action["action"] == {"kind": "chatops", "text": "Ann wants to return order 1234"}


async def test_in_full_the_proposal_is_sent(service, api, chatops):
    await set_autonomy(api, mode="full")
    patch = await api.patch("/employees/support", json={"autonomy": "full"})
    assert patch.status_code == 200
    answer = await ask(service, api, origin="chat")
    assert answer.action.status == "executed"
    assert chatops.requests[0].body == {"text": "Ann wants to return order 1234"}


async def test_an_unconfigured_proposal_is_dropped(service, api, openai, chatops):
    await set_autonomy(api, mode="full")
    openai.reply = f'{REPLY}\n<action>{{"kind": "webhook", "target": "crm"}}</action>'
    answer = await ask(service, api)
    assert answer.answer == REPLY and answer.action is None
    assert (await api.get("/autonomy/log")).json()["entries"] == []
    assert chatops.requests == []


async def test_with_autonomy_off_the_role_is_offered_nothing(service, api, openai, chatops):
    answer = await ask(service, api)
    [prompt] = system_prompts(openai)
    assert "Outbound actions" not in prompt
    assert answer.action is None and chatops.requests == []


async def test_without_an_origin_nothing_is_proposed(service, api, openai, chatops):
    await set_autonomy(api, mode="full")
    await add_refunds(api)
    await api.get("/employees")
    employee = await stored_role(service.database, "support")
    policy = ChatPolicy.from_settings(service.settings)
    answer = await run(answer_question(ChatRequest(QUESTION, employee=employee), policy), service)
    assert answer.action is None and chatops.requests == []
    assert "Outbound actions" not in system_prompts(openai)[0]
