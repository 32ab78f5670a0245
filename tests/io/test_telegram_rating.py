"""Rating an answer on Telegram (ragcore.channels.rating), end to end on the served app
and the fake Bot API: the AI's answer carries 👍 / 👎 once its turn is recorded; a press
from that chat rates the turn (GET /conversations/{id} shows it, ragchat_feedback_total
counts it), is answered and marked under the message; a press naming another chat's
answer changes nothing; a person's message and a handoff notice carry no buttons."""

from __future__ import annotations

from typing import Any

import httpx
import trio

from ragcore.channels.rating import MAX_DATA_BYTES, NOT_RATED, THANKS
from tests.io.channels import REPLY, add_refunds, wait_for
from tests.io.fakes.telegram_server import FakeTelegram
from tests.io.test_metrics import scrape, value
from tests.io.test_telegram import openai, post, settings_overrides, telegram, update

__all__ = ["openai", "settings_overrides", "telegram"]  # the fixtures of test_telegram

CHAT, OTHER_CHAT = 4242, 5151
RATED = {"name": "ragchat_feedback_total", "channel": "telegram"}


def chat_update(update_id: int, chat: int, text: str | None = None) -> dict[str, Any]:
    person = {"id": chat, "is_bot": False, "first_name": "Ada"}
    message = {"chat": {"id": chat, "type": "private"}, "from": person}
    return update(update_id, **message, **({"text": text} if text else {}))


def in_chat(telegram: FakeTelegram, chat: int) -> list[int]:
    """The ids of the bot's messages in ``chat``, in order."""
    return sorted(message for (where, message) in telegram.messages if where == str(chat))


async def answered_with_buttons(api: httpx.AsyncClient, telegram: FakeTelegram, chat: int) -> int:
    """Ask in ``chat``; the id of the answer's message once its rating buttons are there."""
    asked = len(in_chat(telegram, chat))
    assert (await post(api, chat_update(8000 + chat + asked, chat))).status_code == 200
    await wait_for(lambda: len(in_chat(telegram, chat)) > asked)
    message_id = in_chat(telegram, chat)[-1]
    await wait_for(lambda: telegram.buttons(chat, message_id))
    return message_id


async def conversation_of(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    """The Telegram conversations, each with its turns, latest begun first."""
    listed = (await api.get("/conversations", params={"channel": "telegram"})).json()
    return [(await api.get(f"/conversations/{c['id']}")).json() for c in listed["conversations"]]


async def test_an_answer_carries_the_buttons_and_a_press_in_its_chat_rates_it(api, telegram):
    await add_refunds(api)
    message_id = await answered_with_buttons(api, telegram, CHAT)
    shown = telegram.message(CHAT, message_id)
    assert shown["text"].startswith(REPLY)
    faces = [b["text"] for b in telegram.buttons(CHAT, message_id)]
    assert faces == ["👍", "👎"]
    assert all(
        len(b["callback_data"].encode()) <= MAX_DATA_BYTES
        for b in telegram.buttons(CHAT, message_id)
    )
    [conversation] = await conversation_of(api)
    assert conversation["turns"][0]["feedback"] is None
    before = await scrape(api)

    pressed = await post(api, telegram.press(CHAT, message_id, "👎"))

    assert pressed.status_code == 200 and pressed.json() == {}
    [answer] = await wait_for(lambda: telegram.answered)
    assert answer["text"] == THANKS
    await wait_for(lambda: telegram.buttons(CHAT, message_id)[1]["text"] == "👎 ✓")
    assert telegram.buttons(CHAT, message_id)[0]["text"] == "👍"
    [conversation] = await conversation_of(api)
    [turn] = conversation["turns"]
    assert (turn["feedback"], turn["feedback_comment"]) == ("down", None)
    after = await scrape(api)
    assert value(after, **RATED, rating="down") - value(before, **RATED, rating="down") == 1

    # changing one's mind: the other button; the same one again changes nothing shown
    await post(api, telegram.press(CHAT, message_id, "👍"))
    await wait_for(lambda: telegram.buttons(CHAT, message_id)[0]["text"] == "👍 ✓")
    await post(api, telegram.press(CHAT, message_id, "👍"))
    await wait_for(lambda: len(telegram.answered) == 3)
    assert [a["text"] for a in telegram.answered] == [THANKS] * 3
    [conversation] = await conversation_of(api)
    assert conversation["turns"][0]["feedback"] == "up"


async def test_a_press_naming_another_chats_answer_changes_nothing(api, telegram):
    await add_refunds(api)
    theirs = await answered_with_buttons(api, telegram, CHAT)
    mine = await answered_with_buttons(api, telegram, OTHER_CHAT)
    [their_down] = [b for b in telegram.buttons(CHAT, theirs) if b["text"] == "👎"]
    before = await scrape(api)

    # a modified client in the other chat sends the first chat's button under its message
    forged = telegram.forged_press(OTHER_CHAT, mine, their_down["callback_data"], OTHER_CHAT)
    assert (await post(api, forged)).status_code == 200
    # and data no button of ours has
    for data in ("rate:1:1:sideways", "rate:99999:1:up", "hello"):
        assert (await post(api, telegram.forged_press(OTHER_CHAT, mine, data))).status_code == 200

    answers = await wait_for(lambda: len(telegram.answered) == 4 and telegram.answered)
    assert [a["text"] for a in answers] == [NOT_RATED] * 4  # every press is answered
    assert all(c["turns"][0]["feedback"] is None for c in await conversation_of(api))
    assert [b["text"] for b in telegram.buttons(OTHER_CHAT, mine)] == ["👍", "👎"]
    assert [b["text"] for b in telegram.buttons(CHAT, theirs)] == ["👍", "👎"]
    after = await scrape(api)
    for rating in ("up", "down"):
        assert value(after, **RATED, rating=rating) == value(before, **RATED, rating=rating)


async def test_a_person_s_message_and_a_handoff_notice_carry_no_buttons(api, telegram):
    await add_refunds(api)
    asked = chat_update(8101, CHAT, "Can I talk to a person please?")
    assert (await post(api, asked)).status_code == 200
    [notice] = await wait_for(lambda: telegram.sent)
    with trio.fail_after(10):  # handed over once the turn is recorded, after the notice
        while not (found := await conversation_of(api)) or found[0]["mode"] != "human":
            await trio.sleep(0.05)
    [conversation] = found
    written = await api.post(
        f"/conversations/{conversation['id']}/messages", json={"text": "Hello, this is Sam."}
    )
    assert written.status_code == 201 and written.json()["delivered"], written.text
    assert len(telegram.sent) == 2
    assert "reply_markup" not in notice and "reply_markup" not in telegram.sent[1]
    assert all("reply_markup" not in m for m in telegram.messages.values())
    assert not telegram.requests_to(f"/bot{telegram.api_key}/editMessageReplyMarkup")
