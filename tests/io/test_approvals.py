"""The owner's YES/NO on a channel (``handle_owner_reply``, which the channel webhooks call
before the chat pipeline) against the real database and a recording chat-ops receiver;
the owner messaged on each approval channel through fake platform APIs on 127.0.0.1."""

from __future__ import annotations

from datetime import timedelta

import attrs
import psycopg
import pytest

from ragcore.actions.records import INTERRUPTED
from ragio.actions.approvals import handle_owner_reply
from ragio.actions.notify import notify_owner
from tests.io.actions import log_of, set_autonomy
from tests.io.channels import wait_for
from tests.io.fakes.action_receivers import FakeDiscordDM
from tests.io.fakes.telegram_server import FakeTelegram
from tests.io.fakes.twilio_server import FakeTelco

TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
SID, AUTH = "AC0123456789abcdef0123456789abcdef", "telco-auth-token-0123"
DISCORD_BOT = "discord-bot-token-for-tests"
WEBHOOK_SECRET = "webhook-secret_0123"
OWNER = "4242"
STRANGER = "5151"
NOTE = {"kind": "chatops", "text": "Refund order 1234 for Ann"}


@pytest.fixture
async def telegram(serve_fake):
    return await serve_fake(FakeTelegram(TOKEN))


@pytest.fixture
async def telco(serve_fake):
    return await serve_fake(FakeTelco(SID, AUTH))


@pytest.fixture
async def discord(serve_fake):
    return await serve_fake(FakeDiscordDM(DISCORD_BOT))


@pytest.fixture
def settings_overrides(chatops, telegram, telco, discord, authority):
    return {
        "chatops_webhook_url": f"{chatops.base_url}/hook",
        "actions_ca_bundle": str(authority.bundle),
        "actions_allow_private_targets": "true",
        "telegram_bot_token": TOKEN,
        "telegram_api_base_url": telegram.base_url,
        "telegram_webhook_secret": WEBHOOK_SECRET,
        "telco_account_sid": SID,
        "telco_auth_token": AUTH,
        "telco_api_base_url": telco.base_url,
        "whatsapp_from_number": "+14155238886",
        "discord_bot_token": DISCORD_BOT,
        "discord_api_base_url": discord.base_url,
    }


@pytest.fixture
async def held(api, telegram):
    """A chat-ops action held for the owner, who is Telegram chat 4242."""
    await set_autonomy(api, mode="semi", approval_channel="telegram", approval_target=OWNER)
    response = await api.post("/actions", json=NOTE)
    assert response.status_code == 202
    return response.json()["id"]


async def status(api, action_id):
    return (await api.get(f"/actions/{action_id}")).json()["status"]


async def test_the_owner_approves_with_yes(service, api, held, chatops):
    reply = await handle_owner_reply(service, "telegram", OWNER, f"YES {held}")
    assert reply == f"Approved: action {held} was sent."
    assert [r.body for r in chatops.requests] == [{"text": NOTE["text"]}]
    assert await status(api, held) == "executed"
    assert (await api.get(f"/actions/{held}")).json()["decided_by"] == "telegram owner"


async def test_a_yes_from_a_stranger_changes_nothing_and_reveals_nothing(
    service, api, held, chatops
):
    for sender, channel in ((STRANGER, "telegram"), (OWNER, "discord"), (OWNER, "whatsapp")):
        reply = await handle_owner_reply(service, channel, sender, f"YES {held}")
        assert reply is None  # passed on to the chat pipeline like any message
    unknown = await handle_owner_reply(service, "telegram", STRANGER, "YES ZZZZZZZZZZ")
    assert unknown is None  # the same for an id that does not exist
    assert chatops.requests == [] and await status(api, held) == "pending"
    events = [e for e, _ in await log_of(api, held)]
    assert events == ["held", "notified", "not_accepted", "not_accepted", "not_accepted"]
    # the owner can still decide it
    assert "Approved" in await handle_owner_reply(service, "telegram", OWNER, f"yes {held}")
    assert len(chatops.requests) == 1


async def test_each_id_is_decided_once(service, api, held, chatops):
    await handle_owner_reply(service, "telegram", OWNER, f"YES {held}")
    again = await handle_owner_reply(service, "telegram", OWNER, f"YES {held}")
    assert again == f"Action {held} was already decided (executed); nothing changed."
    no = await handle_owner_reply(service, "telegram", OWNER, f"NO {held}")
    assert "already decided" in no
    assert len(chatops.requests) == 1


async def test_no_drops_the_action(service, api, held, chatops):
    reply = await handle_owner_reply(service, "telegram", OWNER, f"no {held.lower()}")
    assert reply == f"Rejected: action {held} was dropped and nothing was sent."
    assert await status(api, held) == "rejected" and chatops.requests == []


async def test_an_expired_id_is_refused(service, api, held, chatops, fake_clock):
    fake_clock.advance(timedelta(hours=24, seconds=1))
    reply = await handle_owner_reply(service, "telegram", OWNER, f"YES {held}")
    assert reply == f"Action {held} expired before it was approved; nothing was sent."
    assert chatops.requests == [] and await status(api, held) == "expired"


async def test_ordinary_messages_are_not_commands(service, held):
    for text in ("What are your opening hours?", "yes please", "no thanks", ""):
        assert await handle_owner_reply(service, "telegram", OWNER, text) is None
    typo = await handle_owner_reply(service, "telegram", OWNER, "YES 7K3M9QXA4U")
    assert typo is not None and "not valid" in typo
    missing = await handle_owner_reply(service, "telegram", OWNER, "YES ZZZZZZZZZZ")
    assert missing == "There is no action ZZZZZZZZZZ waiting for approval."


async def test_a_whatsapp_owner_by_number(service, api, telco, chatops):
    await set_autonomy(
        api, mode="semi", approval_channel="whatsapp", approval_target="+4915112345678"
    )
    held = (await api.post("/actions", json=NOTE)).json()["id"]
    [form] = telco.messages
    assert form["To"] == "whatsapp:+4915112345678" and form["From"] == "whatsapp:+14155238886"
    assert f"YES {held}" in form["Body"]
    # the inbound webhook gives the sender as WaId digits
    reply = await handle_owner_reply(service, "whatsapp", "4915112345678", f"YES {held}")
    assert reply.startswith("Approved") and len(chatops.requests) == 1


async def test_a_discord_owner_gets_a_direct_message(service, api, discord, chatops):
    user = "80351110224678912"
    await set_autonomy(api, mode="semi", approval_channel="discord", approval_target=user)
    held = (await api.post("/actions", json=NOTE)).json()["id"]
    [message] = discord.sent
    assert message["recipient"] == user and f"YES {held}" in message["content"]
    assert message["allowed_mentions"] == {"parse": []}
    assert await handle_owner_reply(service, "discord", "1", f"YES {held}") is None
    reply = await handle_owner_reply(service, "discord", user, f"YES {held}")
    assert reply.startswith("Approved")


async def test_notifying_needs_the_channel_settings(service, monkeypatch):
    bare = attrs.evolve(service.settings, discord_bot_token="", whatsapp_from_number="")
    monkeypatch.setattr(service, "settings", bare)
    sent = await notify_owner(service, "discord", "80351110224678912", "hello")
    assert not sent.ok and "DISCORD_BOT_TOKEN" in sent.detail
    sent = await notify_owner(service, "whatsapp", "+4915112345678", "hello")
    assert not sent.ok and "WHATSAPP_FROM_NUMBER" in sent.detail


async def telegram_message(api, update_id: int, sender: str, text: str) -> None:
    update = {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_700_000_000,
            "chat": {"id": int(sender), "type": "private"},
            "from": {"id": int(sender), "is_bot": False, "first_name": "Someone"},
            "text": text,
        },
    }
    headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    response = await api.post("/webhook/telegram", json=update, headers=headers)
    assert response.status_code == 200, response.text


async def test_the_owner_answers_on_telegram_and_a_stranger_is_just_a_customer(
    api, held, chatops, telegram
):
    notified = len(telegram.sent)  # the owner was told about the held action
    await telegram_message(api, 9001, STRANGER, f"YES {held}")
    await wait_for(lambda: len(telegram.sent) == notified + 1)
    to_stranger = telegram.sent[-1]
    assert to_stranger["chat_id"] == int(STRANGER)
    assert held not in to_stranger["text"]  # answered as a question; nothing about the action
    assert await status(api, held) == "pending" and chatops.requests == []

    await telegram_message(api, 9002, OWNER, f"yes {held.lower()}")
    await wait_for(lambda: len(telegram.sent) == notified + 2)
    to_owner = telegram.sent[-1]
    assert to_owner["chat_id"] == int(OWNER)
    assert to_owner["text"] == f"Approved: action {held} was sent."
    assert await status(api, held) == "executed"
    assert [r.body for r in chatops.requests] == [{"text": NOTE["text"]}]


async def test_an_action_cut_off_while_sending_is_failed_not_sent_again(
    api, held, chatops, database_url
):
    def sending_since(minutes: int) -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE actions SET status = 'executing', "
                "decided_at = now() - make_interval(mins => %s) WHERE id = %s",
                (minutes, held),
            )

    sending_since(0)  # being sent right now: left alone
    assert await status(api, held) == "executing"
    sending_since(60)  # the service stopped while sending it an hour ago
    shown = (await api.get(f"/actions/{held}")).json()
    assert shown["status"] == "failed" and shown["reason"] == INTERRUPTED
    assert ("interrupted", INTERRUPTED) in await log_of(api, held)
    again = await api.post(f"/autonomy/pending/{held}/approve")
    assert again.status_code == 409 and chatops.requests == []
