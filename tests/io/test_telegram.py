"""Telegram end to end on the served app: an update with the secret is acknowledged,
answered as the channel's role through a fake Bot API on 127.0.0.1, and followed by the
workflow call; every way a request is refused, redelivered or not answerable."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import psycopg
import pytest
import trio

from ragcore.channels.telegram import parse_update
from ragio.channels.updates import claim_delivery, mark_answered
from tests.io.channels import (
    FINANCE_VOICE,
    LOCAL_WORKFLOWS,
    QUESTION,
    REPLY,
    SALES_VOICE,
    SUPPORT_VOICE,
    add_refunds,
    add_workflow,
    restarted,
    system_prompts,
    wait_for,
)
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.telegram_server import FakeTelegram
from tests.io.fakes.workflow_receiver import WorkflowReceiver
from tests.io.processes import run_in_process, running_service
from tests.io.test_chat_stream import events

TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
SECRET = "webhook-secret_0123"
HEADER = "X-Telegram-Bot-Api-Secret-Token"


@pytest.fixture
async def openai(serve_fake):
    return await serve_fake(FakeOpenAI(reply=REPLY))


@pytest.fixture
async def telegram(serve_fake):
    return await serve_fake(FakeTelegram(TOKEN))


@pytest.fixture
async def settings_overrides(request, openai, telegram):
    """The service on the fake provider and the fake Bot API; a test changes settings with
    ``@pytest.mark.parametrize("settings_overrides", [{…}], indirect=True)``."""
    settings = {
        "telegram_bot_token": TOKEN,
        "telegram_webhook_secret": SECRET,
        "telegram_api_base_url": telegram.base_url,
        **LOCAL_WORKFLOWS,
    }
    return on_openai(openai, **{**settings, **getattr(request, "param", {})})


def update(update_id: int = 5001, **message) -> dict:
    fields = {"text": QUESTION, **message}
    return {
        "update_id": update_id,
        "message": {
            "message_id": 77,
            "date": 1_700_000_000,
            "chat": {"id": 4242, "type": "private"},
            "from": {"id": 4242, "is_bot": False, "first_name": "Ada"},
            **fields,
        },
    }


async def post(api, body, secret: str | None = SECRET):
    headers = {HEADER: secret} if secret is not None else {}
    return await api.post("/webhook/telegram", json=body, headers=headers)


async def test_a_message_is_answered_with_its_sources_then_the_channels_workflows_called(
    api, telegram, receiver
):
    await add_refunds(api)
    await add_workflow(api, receiver.url("/telegram"), ["telegram", "discord"])
    await add_workflow(api, receiver.url("/whatsapp"), ["whatsapp"])

    response = await post(api, update())

    assert response.status_code == 200 and response.json() == {}
    [sent] = await wait_for(lambda: telegram.sent)
    assert sent["chat_id"] == 4242
    assert sent["reply_parameters"]["message_id"] == 77
    assert sent["text"] == f"{REPLY}\n\nSources:\n[1] refunds.md › Returns and refunds"

    [call] = await wait_for(lambda: receiver.requests)
    assert call.path == "/telegram"
    assert call.body["channel"] == "telegram"
    assert call.body["message"] == QUESTION
    assert call.body["ai_reply"] == REPLY
    context = call.body["context"]
    assert context["role"] == "support" and context["conversation"] == "4242"
    assert context["sender_name"] == "Ada" and context["delivery_id"] == "5001"
    assert context["citations"][0]["document_name"] == "refunds.md"
    # the workflow is called after the reply went out
    assert call.at >= telegram.requests_to(f"/bot{TOKEN}/sendMessage")[0].at


@pytest.mark.parametrize(
    "settings_overrides", [{"workflow_allow_private_targets": "false"}], indirect=True
)
async def test_without_private_targets_a_stored_loopback_workflow_is_not_called_after_a_reply(
    api, telegram, receiver, database_url, caplog
):
    await add_refunds(api)
    port = receiver.base_url.rsplit(":", 1)[1]
    with psycopg.connect(database_url) as conn:  # stored before the address rules existed
        conn.execute(
            "INSERT INTO automation_workflows (name, webhook_url, channels) VALUES (%s, %s, %s)",
            ("Local CRM", f"http://127.1:{port}/telegram", ["telegram"]),
        )
    caplog.set_level(logging.WARNING)

    assert (await post(api, update())).status_code == 200
    [sent] = await wait_for(lambda: telegram.sent)
    assert sent["text"].startswith(REPLY)  # the reply is unchanged
    await wait_for(lambda: "'Local CRM'" in caplog.text)
    assert "127.1: 127.0.0.1 is a loopback address; set WORKFLOW_ALLOW_PRIVATE_TARGETS" in (
        caplog.text
    )
    assert receiver.requests == []


@pytest.mark.parametrize("secret", [None, "", "wrong-secret", SECRET + "x"])
async def test_a_missing_or_wrong_secret_is_403_and_nothing_is_answered(
    api, openai, telegram, secret
):
    response = await post(api, update(), secret=secret)
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"
    assert SECRET not in response.text
    # a body that is no update at all is still 403: the secret is checked first
    assert (await post(api, {"hello": 1}, secret=secret)).status_code == 403
    assert not openai.requests and not telegram.requests


@pytest.mark.parametrize("settings_overrides", [{"telegram_webhook_secret": ""}], indirect=True)
async def test_without_a_configured_secret_every_request_is_403(api, telegram):
    for secret in (None, "", "anything"):
        assert (await post(api, update(), secret=secret)).status_code == 403
    assert not telegram.requests


@pytest.mark.parametrize(
    "settings_overrides",
    [{"telegram_webhook_secret": "", "telegram_allow_unsigned": "true"}],
    indirect=True,
)
async def test_unsigned_requests_are_answered_when_allowed_and_each_is_logged(
    api, telegram, caplog
):
    await add_refunds(api)
    caplog.set_level(logging.WARNING, "ragio.http.webhooks")
    assert (await post(api, update(), secret=None)).status_code == 200
    await wait_for(lambda: telegram.sent)
    assert "TELEGRAM_ALLOW_UNSIGNED=true: accepted an unverified telegram" in caplog.text


@pytest.mark.parametrize(
    "body",
    [{"hello": 1}, [1, 2], {"update_id": "x", "message": {}}, {"update_id": 1, "message": {}}],
)
async def test_a_verified_body_that_is_no_update_is_400(api, telegram, body):
    response = await post(api, body)
    assert response.status_code == 400
    assert "not a telegram update" in response.json()["detail"]
    assert not telegram.requests


async def test_a_malformed_json_body_is_400(api):
    response = await api.post("/webhook/telegram", content=b"{not json", headers={HEADER: SECRET})
    assert response.status_code == 400


async def test_a_redelivered_update_is_answered_once_even_after_a_restart(
    api, service, telegram, nursery, database_url
):
    await add_refunds(api)
    assert (await post(api, update(5001))).status_code == 200
    assert (await post(api, update(5001))).status_code == 200  # Telegram retrying
    await wait_for(lambda: telegram.sent)

    async with restarted(service, nursery) as again:
        assert (await post(again, update(5001))).status_code == 200
        assert (await post(again, update(5002, text="Refunds are paid how?"))).status_code == 200
        await wait_for(lambda: len(telegram.sent) >= 2)

    assert len(telegram.sent) == 2  # 5001 once, then 5002
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT delivery_id FROM channel_updates ORDER BY 1").fetchall()
    assert rows == [("5001",), ("5002",)]


async def test_two_deliveries_of_one_update_at_once_are_answered_once(api, telegram):
    await add_refunds(api)
    async with trio.open_nursery() as both:
        for _ in range(2):
            both.start_soon(post, api, update(6001))
    assert (await post(api, update(6002))).status_code == 200
    await wait_for(lambda: len(telegram.sent) >= 2)
    assert len(telegram.sent) == 2  # 6001 once, 6002 once


@pytest.mark.parametrize(
    ("message", "named"),
    [
        ({"text": None, "sticker": {"file_id": "CAAC", "emoji": "👍"}}, "stickers"),
        ({"text": None, "photo": [{"file_id": "AgAD"}], "caption": "what is this?"}, "photos"),
        ({"text": None, "voice": {"file_id": "AwAD", "duration": 3}}, "voice messages"),
    ],
)
async def test_a_message_kind_it_cannot_read_gets_a_polite_reply(
    api, openai, telegram, receiver, message, named
):
    await add_workflow(api, receiver.url("/telegram"), ["telegram"])
    body = update(**message)
    body["message"] = {k: v for k, v in body["message"].items() if v is not None}
    assert (await post(api, body)).status_code == 200
    [sent] = await wait_for(lambda: telegram.sent)
    assert f"can't read {named}" in sent["text"] and "text messages" in sent["text"]
    assert not openai.requests_to("/v1/chat/completions")  # no answer was generated
    # the next message is answered normally; only that AI reply calls the workflow
    await add_refunds(api)
    assert (await post(api, update(5002))).status_code == 200
    [call] = await wait_for(lambda: receiver.requests)
    assert call.body["message"] == QUESTION


async def test_start_says_what_the_bot_does_without_asking_the_provider(api, openai, telegram):
    assert (await post(api, update(text="/start"))).status_code == 200
    [sent] = await wait_for(lambda: telegram.sent)
    assert "answer from our documents" in sent["text"] and "/sales (Sales)" in sent["text"]
    assert "/finance" not in sent["text"]
    assert not openai.requests_to("/v1/chat/completions")


@pytest.mark.parametrize("asked", ["/finance", "/hr", "/ceo", "/manager", "@finance"])
async def test_a_customer_cannot_reach_an_internal_role_by_asking(
    api, openai, telegram, receiver, asked
):
    await add_refunds(api)
    await add_workflow(api, receiver.url("/telegram"), ["telegram"])
    # even when the owner ties finance to Telegram
    patched = await api.patch("/employees/finance", json={"channels": ["api", "telegram"]})
    assert patched.status_code == 200
    assert (await post(api, update(text=f"{asked} {QUESTION}"))).status_code == 200
    await wait_for(lambda: telegram.sent)
    [prompt] = system_prompts(openai)
    assert SUPPORT_VOICE in prompt and FINANCE_VOICE not in prompt
    [call] = await wait_for(lambda: receiver.requests)
    assert call.body["context"]["role"] == "support"


async def test_a_customer_can_ask_for_a_customer_facing_role(api, openai, telegram):
    await add_refunds(api)
    assert (await post(api, update(text=f"/sales {QUESTION}"))).status_code == 200
    await wait_for(lambda: telegram.sent)
    [prompt] = system_prompts(openai)
    assert SALES_VOICE in prompt


async def test_the_role_tied_to_the_channel_answers_when_support_is_not(api, openai, telegram):
    await add_refunds(api)
    for role in ("support", "secretary"):
        response = await api.patch(f"/employees/{role}", json={"channels": ["api"]})
        assert response.status_code == 200
    assert (await post(api, update())).status_code == 200
    await wait_for(lambda: telegram.sent)
    [prompt] = system_prompts(openai)
    assert SALES_VOICE in prompt


async def test_updates_other_than_messages_are_acknowledged_and_ignored(api, telegram):
    edited = {"update_id": 7001, "edited_message": update()["message"]}
    assert (await post(api, edited)).status_code == 200
    assert (await post(api, update(7002))).status_code == 200
    await wait_for(lambda: telegram.sent)
    assert len(telegram.sent) == 1


async def test_a_provider_failure_is_an_apology_not_silence(api, openai, telegram, receiver):
    await add_refunds(api)
    await add_workflow(api, receiver.url("/telegram"), ["telegram"])
    openai.fail_next(401)  # a revoked key: no retry, no fallback configured
    assert (await post(api, update())).status_code == 200
    [sent] = await wait_for(lambda: telegram.sent)
    assert "couldn't answer that just now" in sent["text"]
    assert not receiver.requests


async def test_a_rate_limited_reply_is_sent_again(api, telegram):
    await add_refunds(api)
    telegram.fail_next(429)
    assert (await post(api, update())).status_code == 200
    await wait_for(lambda: telegram.sent)
    assert len(telegram.requests_to(f"/bot{TOKEN}/sendMessage")) == 2


async def test_a_long_answer_arrives_in_parts_within_telegrams_limit(api, openai, telegram):
    await add_refunds(api)
    openai.reply = " ".join(f"Point {i} is about returns within 30 days [1]." for i in range(200))
    assert (await post(api, update())).status_code == 200
    parts = await wait_for(lambda: len(telegram.sent) >= 3 and telegram.sent)
    assert all(len(p["text"]) <= 4096 for p in parts)
    assert parts[-1]["text"].endswith("Sources:\n[1] refunds.md › Returns and refunds")
    assert "reply_parameters" in parts[0] and "reply_parameters" not in parts[1]


async def test_the_bot_token_never_reaches_the_log(api, telegram, caplog):
    caplog.set_level(logging.DEBUG)
    await add_refunds(api)
    assert (await post(api, update())).status_code == 200
    await wait_for(lambda: telegram.sent)
    # the request is logged once its answer is back, a moment after the fake has it
    await wait_for(lambda: "/sendMessage" in caplog.text)
    assert TOKEN not in caplog.text and TOKEN.split(":")[1] not in caplog.text  # … masked


@pytest.mark.parametrize("settings_overrides", [{"telegram_bot_token": ""}], indirect=True)
async def test_without_a_bot_token_the_update_is_refused_for_later(api, database_url):
    response = await post(api, update())
    assert response.status_code == 503
    assert "TELEGRAM_BOT_TOKEN" in response.json()["detail"]
    with psycopg.connect(database_url) as conn:  # not claimed: Telegram's retry is answered
        assert conn.execute("SELECT count(*) FROM channel_updates").fetchone() == (0,)


async def set_webhook(monkeypatch, capsys, *args: str, **settings: str) -> tuple[int, str, str]:
    """`ragchat telegram set-webhook ARGS` in this process (its own Trio loop, in a thread:
    the fake Telegram answers in this test's loop); a process's start-up would cost more
    than the command."""
    return await trio.to_thread.run_sync(
        lambda: run_in_process(monkeypatch, capsys, "telegram", "set-webhook", *args, **settings)
    )


async def test_set_webhook_registers_the_url_with_the_secret(
    telegram, tmp_path, monkeypatch, capsys
):
    code, out, err = await set_webhook(
        monkeypatch,
        capsys,
        "https://chat.example.com/webhook/telegram",
        cwd=tmp_path,
        telegram_bot_token=TOKEN,
        telegram_webhook_secret=SECRET,
        telegram_api_base_url=telegram.base_url,
    )
    assert code == 0, err
    assert "https://chat.example.com/webhook/telegram" in out
    assert telegram.webhooks == [
        {
            "url": "https://chat.example.com/webhook/telegram",
            "secret_token": SECRET,
            "allowed_updates": ["message", "callback_query"],
        }
    ]
    assert TOKEN not in out + err


@pytest.mark.parametrize(
    ("args", "settings", "says"),
    [
        ([], {"telegram_bot_token": TOKEN, "telegram_webhook_secret": SECRET}, "PUBLIC_BASE_URL"),
        (["https://x.example/webhook/telegram"], {"telegram_bot_token": TOKEN}, "SECRET"),
        (
            ["http://x.example/hook"],
            {"telegram_bot_token": TOKEN, "telegram_webhook_secret": SECRET},
            "https",
        ),
    ],
)
async def test_set_webhook_refuses_what_telegram_would(
    telegram, tmp_path, args, settings, says, monkeypatch, capsys
):
    code, _, err = await set_webhook(
        monkeypatch,
        capsys,
        *args,
        cwd=tmp_path,
        telegram_api_base_url=telegram.base_url,
        **settings,
    )
    assert code == 2 and says in err
    assert not telegram.requests


async def test_the_real_service_answers_and_keeps_the_token_out_of_its_log(
    openai, telegram, database_url, tmp_path
):
    """`ragchat serve` as a user runs it (logging at INFO): webhook to reply."""
    settings = on_openai(
        openai,
        database_url=database_url,
        telegram_bot_token=TOKEN,
        telegram_webhook_secret=SECRET,
        telegram_api_base_url=telegram.base_url,
    )
    serving = running_service(tmp_path, **settings)
    process, base_url = await trio.to_thread.run_sync(serving.__enter__)
    try:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            await add_refunds(client)
            assert (await post(client, update())).status_code == 200
            assert (await post(client, update(), secret="wrong")).status_code == 403
        [sent] = await wait_for(lambda: telegram.sent, 30)
        assert sent["text"].startswith(REPLY)
    finally:
        await trio.to_thread.run_sync(serving.__exit__, None, None, None)
    log = process.stdout.read()
    assert "POST /webhook/telegram" in log  # the log has the requests, not the token:
    assert TOKEN not in log and SECRET not in log  # httpx's line of each call is off


async def test_the_support_role_learns_a_question_three_customers_ask(api, telegram):
    await add_refunds(api)
    for n, person in enumerate((4242, 4343, 4242, 4444)):  # one asks twice: three people
        message = {"chat": {"id": person, "type": "private"}}
        message["from"] = {"id": person, "is_bot": False, "first_name": "C"}
        assert (await post(api, update(6000 + n, **message))).status_code == 200
        await wait_for(lambda n=n: len(telegram.sent) == n + 1)
        memory = (await api.get("/employees/support/memory?tags=frequent-question")).json()
        assert len(memory["memory"]) == (1 if n == 3 else 0)
    [pattern] = memory["memory"]
    assert pattern["text"] == f'People often ask: "{QUESTION}". It is answered in: refunds.md.'


async def test_a_hanging_failing_or_absent_workflow_changes_nothing_in_the_reply(
    api, telegram, serve_fake, database_url
):
    await add_refunds(api)
    hanging, failing = await serve_fake(WorkflowReceiver()), await serve_fake(WorkflowReceiver())
    hanging.delay = 60  # far beyond the 10 s a workflow call may take
    failing.fail_next(500, times=10)
    await add_workflow(api, hanging.url(), ["telegram"])
    await add_workflow(api, failing.url(), ["telegram"])
    await add_workflow(api, "http://127.0.0.1:9/closed", ["telegram"])  # nothing listens

    started = trio.current_time()
    assert (await post(api, update())).status_code == 200
    [sent] = await wait_for(lambda: telegram.sent)
    replied_after = trio.current_time() - started
    assert sent["text"].startswith(REPLY)
    await wait_for(lambda: hanging.requests and failing.requests)  # the workflows were called
    assert replied_after < 5  # the reply did not wait for any of them
    assert len(telegram.sent) == 1  # and was sent once, unchanged
    # left behind: the delivery marked answered (it is not answered again at the next start)
    await wait_for(lambda: answered_ids(database_url) == [str(update()["update_id"])], 5)


async def test_an_answer_cut_off_by_a_stop_is_given_at_the_next_start(
    api, service, telegram, nursery, database_url
):
    await add_refunds(api)
    cut_off = parse_update(json.dumps(update(7001)).encode())
    answered = parse_update(json.dumps(update(7002)).encode())
    stale = parse_update(json.dumps(update(7003)).encode())
    with psycopg.connect(database_url, autocommit=True) as conn:
        # claimed and acknowledged, then the service stopped before replying
        for message in (cut_off, answered, stale):
            assert claim_delivery(conn, message, service.clock.now())
        mark_answered(conn, "telegram", "7002")
        conn.execute(
            "UPDATE channel_updates SET received_at = now() - interval '2 hours' "
            "WHERE delivery_id = '7003'"
        )

    async with restarted(service, nursery):
        [sent] = await wait_for(lambda: telegram.sent)
        assert sent["chat_id"] == 4242 and sent["text"].startswith(REPLY)
        await wait_for(lambda: answered_ids(database_url) == ["7001", "7002"])
    before = resumed(database_url)
    async with restarted(service, nursery) as again:  # nothing is left to resume
        assert (await again.get("/health")).status_code == 200  # start-up is over
    assert resumed(database_url) == before and len(telegram.sent) == 1
    with psycopg.connect(database_url) as conn:
        kept = conn.execute("SELECT count(*) FROM channel_updates WHERE message IS NOT NULL")
        assert kept.fetchone()[0] == 0  # no message (nor credential) is kept


def resumed(database_url: str) -> list[tuple[str, Any]]:
    """When each delivery was taken up at a start (None: never)."""
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT delivery_id, resumed_at FROM channel_updates ORDER BY 1"
        ).fetchall()


def answered_ids(database_url: str) -> list[str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT delivery_id FROM channel_updates WHERE answered_at IS NOT NULL ORDER BY 1"
        ).fetchall()
    return [delivery for (delivery,) in rows]


async def test_a_follow_up_in_the_chat_is_rewritten_with_the_conversation_and_recorded(
    api, openai, telegram
):
    await add_refunds(api)

    def respond(body: dict[str, Any]) -> str:
        if body["messages"][0]["content"].startswith("You rewrite the last question"):
            return "How long do refunds take to reach me?"
        return REPLY

    openai.respond = respond
    await post(api, update(6001))
    await wait_for(lambda: len(telegram.sent) == 1)
    await post(api, update(6002, text="and the money?", message_id=78))
    await wait_for(lambda: len(telegram.sent) == 2)

    chats = [r.body for r in openai.requests_to("/v1/chat/completions")]
    rewrite = chats[1]  # the first question stood alone: answered at once
    assert f"Customer: {QUESTION}" in rewrite["messages"][1]["content"]
    assert rewrite["messages"][1]["content"].endswith("Last question: and the money?")
    assert "Question: How long do refunds take to reach me?" in chats[2]["messages"][-1]["content"]

    # the turn is recorded a moment after the reply is sent
    with trio.fail_after(10):
        while True:
            listed = (await api.get("/conversations", params={"channel": "telegram"})).json()
            if listed["conversations"] and listed["conversations"][0]["turn_count"] == 2:
                break
            await trio.sleep(0.05)
    [conversation] = listed["conversations"]
    assert conversation["turn_count"] == 2 and conversation["role"] == "support"
    turns = (await api.get(f"/conversations/{conversation['id']}")).json()["turns"]
    assert [t["question"] for t in turns] == [QUESTION, "and the money?"]
    assert turns[1]["search_question"] == "How long do refunds take to reach me?"
    assert "4242" not in json.dumps(conversation)  # the chat is kept only as a hash


async def test_a_turn_is_timed_by_stage_alike_on_chat_its_stream_and_telegram(
    api, openai, telegram
):
    """Every channel's turn is one run of the turn pipeline: its timings name the same
    stages, each a part of answer_ms; a streamed answer also says when its first words
    came, a reply sent on Telegram how long the sending took."""
    await add_refunds(api)
    openai.chat_delay = 0.2  # the model thinks a fifth of a second before it writes
    openai.word_delay = 0.01

    chat = await api.post("/chat", json={"question": QUESTION})
    assert chat.status_code == 200, chat.text
    response, received = await events(api, question=QUESTION)
    assert response.status_code == 200 and received[-1][0] == "done"
    await post(api, update())
    await wait_for(lambda: telegram.sent)
    with trio.fail_after(10):  # the turn is recorded a moment after the reply is sent
        while not (await api.get("/conversations", params={"channel": "telegram"})).json()[
            "conversations"
        ]:
            await trio.sleep(0.05)
    [on_telegram] = (await api.get("/conversations", params={"channel": "telegram"})).json()[
        "conversations"
    ]

    timings = {}
    for channel, conversation_id in (
        ("chat", chat.json()["conversation_id"]),
        ("stream", received[-1][1]["conversation_id"]),
        ("telegram", on_telegram["id"]),
    ):
        [turn] = (await api.get(f"/conversations/{conversation_id}")).json()["turns"]
        timings[channel] = turn["timings"]
    # no language_ms: the question's function words tell its language, the detector is not asked
    answering = {"live_ms", "embedding_ms", "search_ms", "model_ms"}
    assert set(timings["chat"]) == answering | {"answer_ms"}, timings
    assert set(timings["stream"]) == answering | {"answer_ms", "first_token_ms"}, timings
    assert set(timings["telegram"]) == answering | {"answer_ms", "reply_ms"}, timings
    for channel, taken in timings.items():
        stages = [ms for stage, ms in taken.items() if stage not in ("answer_ms", "first_token_ms")]
        assert sum(stages) <= taken["answer_ms"], (channel, taken)
        assert taken["model_ms"] >= 200, (channel, taken)  # the model's fifth of a second
    assert 200 <= timings["stream"]["first_token_ms"] <= timings["stream"]["answer_ms"]
