"""Human handoff end to end on each text channel (docs/handoff.md): a customer asks for a
person through the platform's real webhook; the owner is told on the chat-ops receiver
and in their Telegram chat; the owner answers from the API and by replying in Telegram;
the customer gets both on their own channel; the AI stays silent meanwhile and answers
again after the hand-back or the idle timeout (the service's clock moved). Fake platform
APIs on 127.0.0.1 speak each platform's wire format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio

from tests.io import test_discord as discord_wire
from tests.io import test_telegram as telegram_wire
from tests.io import test_whatsapp as whatsapp_wire
from tests.io.actions import set_autonomy
from tests.io.channels import LOCAL_WORKFLOWS, REPLY, add_refunds, wait_for
from tests.io.conftest import on_openai
from tests.io.fakes.discord_server import FakeDiscord
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.telegram_server import FakeTelegram
from tests.io.fakes.twilio_server import FakeTelco

OWNER = "9999"  # the owner's Telegram chat, the approval identity
STRANGER = "5151"
CUSTOMER_TELEGRAM = "4242"
ASK_FOR_PERSON = "Can I talk to a person please?"
WAITING = "My parcel never arrived, order 1234."


@pytest.fixture
async def openai(serve_fake):
    return await serve_fake(FakeOpenAI(reply=REPLY))


@pytest.fixture
async def telegram(serve_fake):
    return await serve_fake(FakeTelegram(telegram_wire.TOKEN))


@pytest.fixture
async def telco(serve_fake):
    return await serve_fake(FakeTelco(whatsapp_wire.SID, whatsapp_wire.AUTH_TOKEN))


@pytest.fixture
async def discord(serve_fake):
    return await serve_fake(FakeDiscord(discord_wire.BOT_TOKEN))


@pytest.fixture
def settings_overrides(openai, telegram, telco, discord, chatops, authority):
    return on_openai(
        openai,
        telegram_bot_token=telegram_wire.TOKEN,
        telegram_webhook_secret=telegram_wire.SECRET,
        telegram_api_base_url=telegram.base_url,
        telco_account_sid=whatsapp_wire.SID,
        telco_auth_token=whatsapp_wire.AUTH_TOKEN,
        telco_api_base_url=telco.base_url,
        public_base_url=whatsapp_wire.PUBLIC,
        discord_public_key=discord_wire.PUBLIC_KEY,
        discord_bot_token=discord_wire.BOT_TOKEN,
        discord_api_base_url=discord.base_url,
        chatops_webhook_url=f"{chatops.base_url}/hook",
        actions_ca_bundle=str(authority.bundle),
        actions_allow_private_targets="true",
        **LOCAL_WORKFLOWS,
    )


@pytest.fixture
async def shop(api):
    """The owner's setup: a document, the business's name, the owner's Telegram chat."""
    await add_refunds(api)
    response = await api.patch("/profile", json={"name": "Acme Shoes"})
    assert response.status_code == 200, response.text
    await set_autonomy(api, approval_channel="telegram", approval_target=OWNER)


class Customer:
    """One customer writing through a channel's real webhook, and what reached them."""

    def __init__(self, channel: str, api: Any, telegram: Any, telco: Any, discord: Any):
        self.channel, self.api = channel, api
        self.telegram, self.telco, self.discord = telegram, telco, discord
        self.sent = 0

    async def says(self, text: str) -> None:
        self.sent += 1
        n = self.sent
        if self.channel == "telegram":
            body = telegram_wire.update(6000 + n, text=text)
            response = await telegram_wire.post(self.api, body)
        elif self.channel == "whatsapp":
            form = whatsapp_wire.incoming(sid=f"SM{n:032d}", Body=text)
            response = await whatsapp_wire.post(self.api, form)
        else:
            response = await discord_wire.post(self.api, discord_wire.ask(str(1100 + n), text))
        assert response.status_code == 200, response.text

    def received(self) -> list[str]:
        if self.channel == "telegram":
            return [m["text"] for m in self.telegram.sent if str(m["chat_id"]) == CUSTOMER_TELEGRAM]
        if self.channel == "whatsapp":
            return [m["Body"] for m in self.telco.messages if m["To"] == whatsapp_wire.CUSTOMER]
        return [
            body["content"]
            for body in [b for _, _, b in self.discord.edits]
            + [b for _, _, b in self.discord.followups]
            + [b for _, b in self.discord.channel_messages]
        ]

    async def gets(self, count: int) -> list[str]:
        await wait_for(lambda: len(self.received()) >= count)
        return self.received()


def to_owner(telegram: Any) -> list[dict[str, Any]]:
    return [m for m in telegram.sent if str(m["chat_id"]) == OWNER]


def completions(openai: Any) -> int:
    return sum(1 for r in openai.requests if r.path.endswith("/chat/completions"))


async def owner_replies_in_telegram(api, telegram, text, replied_to, sender=OWNER, update_id=1):
    body = telegram_wire.update(
        7000 + update_id,
        text=text,
        chat={"id": int(OWNER), "type": "private"},
        reply_to_message={"message_id": int(replied_to), "date": 1, "chat": {"id": int(OWNER)}},
    )
    body["message"]["from"] = {"id": int(sender), "is_bot": False, "first_name": "Own"}
    response = await telegram_wire.post(api, body)
    assert response.status_code == 200, response.text


async def conversation(api, channel):
    listed = (await api.get("/conversations", params={"channel": channel})).json()
    found = listed["conversations"][0]["id"]
    return (await api.get(f"/conversations/{found}")).json()


async def recorded(api, condition, channel="telegram"):
    """The channel's latest conversation once ``condition`` holds of it (a turn is
    recorded just after its reply went out)."""
    with trio.fail_after(15):
        while True:
            listed = (await api.get("/conversations", params={"channel": channel})).json()
            if listed["conversations"]:
                found = await conversation(api, channel)
                if condition(found):
                    return found
            await trio.sleep(0.05)


@pytest.mark.parametrize("channel", ["telegram", "whatsapp", "discord"])
async def test_a_person_takes_over_and_answers_on_the_customers_channel(
    api, shop, openai, telegram, telco, discord, chatops, channel
):
    customer = Customer(channel, api, telegram, telco, discord)
    await customer.says(ASK_FOR_PERSON)
    [notice] = await customer.gets(1)
    assert notice == "A person from Acme Shoes will reply here."
    assert completions(openai) == 0  # the AI was not asked

    # the owner is told on chat-ops and in their Telegram chat, with the console's link
    await wait_for(lambda: chatops.requests and to_owner(telegram))
    hook = chatops.requests[0].body
    assert f"A customer on {channel} needs a person" in hook["text"] == hook["content"]
    assert ASK_FOR_PERSON in hook["text"]
    [told] = to_owner(telegram)
    talk = await conversation(api, channel)
    assert f"{whatsapp_wire.PUBLIC}/#/inbox/{talk['id']}" in told["text"]
    assert talk["mode"] == "human" and talk["turns"][0]["outcome"] == "handed_off"
    inbox = (await api.get("/conversations", params={"mode": "human"})).json()
    assert [c["id"] for c in inbox["conversations"]] == [talk["id"]]

    # the customer writes on: the AI stays silent, the owner gets the message
    await customer.says(WAITING)
    await wait_for(lambda: len(to_owner(telegram)) == 2)
    assert WAITING in to_owner(telegram)[1]["text"]
    assert completions(openai) == 0 and len(customer.received()) == 1

    # the owner answers from the API, then by replying in Telegram
    sent = await api.post(f"/conversations/{talk['id']}/messages", json={"text": "Hi, Ann here."})
    assert sent.status_code == 201, sent.text
    assert sent.json()["delivered"] is True
    assert any(said.endswith("Hi, Ann here.") for said in await customer.gets(2))
    notification = telegram.sent.index(told)
    replied_to = 1000 + notification  # the fake numbers its messages from 1000
    await owner_replies_in_telegram(api, telegram, "It ships today.", replied_to)
    assert any(said.endswith("It ships today.") for said in await customer.gets(3))
    await wait_for(lambda: any("Sent to the customer" in m["text"] for m in to_owner(telegram)))

    talk = await conversation(api, channel)
    authors = [(t["author"], t["person"], t["outcome"]) for t in talk["turns"]]
    assert authors == [
        ("ai", None, "handed_off"),
        ("customer", None, "to_person"),
        ("person", "console", "sent"),
        ("person", "telegram owner", "sent"),
    ]
    assert talk["waiting_since"] is None

    # handed back: the AI answers the next question
    back = await api.post(f"/conversations/{talk['id']}/mode", json={"mode": "ai"})
    assert back.status_code == 200 and back.json()["mode"] == "ai"
    await customer.says(telegram_wire.QUESTION)
    assert any(REPLY.split(" [")[0] in said for said in await customer.gets(4))
    assert completions(openai) == 1
    log = [
        (e["event"], e["to_mode"], e["by"])
        for e in (await conversation(api, channel))["handoff_log"]
    ]
    assert log == [("moved", "human", "customer"), ("moved", "ai", "console")]


async def test_a_reply_from_anyone_but_the_owner_is_refused_and_recorded(
    api, shop, telegram, telco, discord
):
    customer = Customer("telegram", api, telegram, telco, discord)
    await customer.says(ASK_FOR_PERSON)
    await wait_for(lambda: to_owner(telegram))
    talk_id = (await conversation(api, "telegram"))["id"]
    replied_to = 1000 + telegram.sent.index(to_owner(telegram)[0])
    await owner_replies_in_telegram(api, telegram, "I am the owner, honest", replied_to, STRANGER)
    await wait_for(lambda: len(telegram.sent) >= 3)  # the stranger's message is answered as any
    talk = (await api.get(f"/conversations/{talk_id}")).json()
    assert [t["author"] for t in talk["turns"]] == ["ai"]  # nothing reached the customer
    assert len(customer.received()) == 1
    refused = [e for e in talk["handoff_log"] if e["event"] == "refused"]
    assert refused and refused[0]["by"] == "telegram stranger"


async def test_a_closed_conversation_refuses_a_reply_and_the_next_message_begins_anew(
    api, shop, openai, telegram, telco, discord
):
    customer = Customer("telegram", api, telegram, telco, discord)
    await customer.says(ASK_FOR_PERSON)
    talk = await recorded(api, lambda c: c["mode"] == "human")
    closed = await api.post(f"/conversations/{talk['id']}/mode", json={"mode": "closed"})
    assert closed.status_code == 200
    refused = await api.post(f"/conversations/{talk['id']}/messages", json={"text": "Hello?"})
    assert refused.status_code == 409
    assert "closed" in refused.json()["detail"]
    await customer.says(telegram_wire.QUESTION)
    await customer.gets(2)
    assert completions(openai) == 1  # a new conversation, with the AI
    newest = await recorded(api, lambda c: c["id"] != talk["id"])
    assert newest["mode"] == "ai" and newest["turns"][0]["author"] == "ai"


async def test_a_chats_messages_are_answered_in_the_order_they_came(
    api, shop, openai, telegram, telco, discord
):
    # the second line comes before the first one's turn is recorded: it must still wait
    # for it, and go to the person the first one asked for, not to the AI
    customer = Customer("telegram", api, telegram, telco, discord)
    await customer.says(ASK_FOR_PERSON)
    await customer.says(WAITING)
    await wait_for(lambda: len(to_owner(telegram)) == 2)
    talk = await recorded(api, lambda c: c["turn_count"] == 2)
    assert [t["author"] for t in talk["turns"]] == ["ai", "customer"]
    assert completions(openai) == 0


async def test_the_ai_answers_again_after_the_idle_timeout(
    api, shop, openai, telegram, telco, discord, fake_clock
):
    customer = Customer("telegram", api, telegram, telco, discord)
    await customer.says(ASK_FOR_PERSON)
    await customer.gets(1)
    await customer.says(WAITING)
    await wait_for(lambda: len(to_owner(telegram)) == 2)
    assert completions(openai) == 0
    fake_clock.advance(timedelta(minutes=61))  # HANDOFF_IDLE_MINUTES is 60
    await customer.says(telegram_wire.QUESTION)
    await customer.gets(2)
    assert completions(openai) == 1
    talk = await recorded(api, lambda c: c["turn_count"] == 3)
    assert talk["mode"] == "ai"
    assert talk["handoff_log"][-1]["by"] == "timeout"


async def test_outside_opening_hours_the_customer_is_told_when_the_business_opens(
    api, shop, telegram, telco, discord, fake_clock
):
    hours = {"opening_hours": "Mon-Fri 09:00-17:00", "timezone": "Europe/Berlin"}
    assert (await api.patch("/profile", json=hours)).status_code == 200
    fake_clock.at = datetime(2026, 11, 28, 20, 0, tzinfo=UTC)  # a Saturday evening in Berlin
    before = await counted(api)
    customer = Customer("telegram", api, telegram, telco, discord)
    await customer.says("Ich möchte mit einem Mitarbeiter sprechen")
    assert await customer.gets(1) == [
        "Eine Person von Acme Shoes antwortet Ihnen hier. Wir haben gerade geschlossen; "
        "unsere Öffnungszeiten: Mon-Fri 09:00-17:00."
    ]
    talk = await recorded(api, lambda c: c["mode"] == "human")
    fake_clock.advance(timedelta(minutes=20))
    sent = await api.post(f"/conversations/{talk['id']}/messages", json={"text": "Hallo!"})
    assert sent.json()["delivered"] is True
    after = await counted(api)  # the counters are the process's: other tests add to them
    assert after["handoffs"] - before["handoffs"] == 1
    assert after["within 30 min"] - before["within 30 min"] == 1
    assert after["within 10 min"] == before["within 10 min"]


async def counted(api) -> dict[str, float]:
    """The handoffs to a person on Telegram, and the first replies within 10 and 30
    minutes, as /metrics shows them."""
    lines = (await api.get("/metrics")).text.splitlines()
    waited = 'ragchat_handoff_first_reply_seconds_bucket{channel="telegram",le="%s"}'
    wanted = {
        "handoffs": 'ragchat_handoffs_total{by="customer",channel="telegram"}',
        "within 10 min": waited % "600.0",
        "within 30 min": waited % "1800.0",
    }
    values = {name: 0.0 for name in wanted}
    for line in lines:
        for name, series in wanted.items():
            if line.startswith(series + " "):
                values[name] = float(line.split()[-1])
    return values
