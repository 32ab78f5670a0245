"""Discord end to end on the served app: interactions signed with PyNaCl, PING answered
with PONG, /ask deferred at once and answered by editing the original response on a fake
Discord API on 127.0.0.1, then the workflow call; every refusal."""

from __future__ import annotations

import json
import logging
import time

import pytest
import trio
from nacl.encoding import HexEncoder
from nacl.signing import SigningKey

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
from tests.io.fakes.discord_server import FakeDiscord
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.processes import run_in_process

KEY = SigningKey.generate()
PUBLIC_KEY = KEY.verify_key.encode(HexEncoder).decode()
APPLICATION = "1234567890123456789"
BOT_TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.fake.bot-token"
DISCORD_ACK_SECONDS = 3  # Discord drops an interaction not answered within this


@pytest.fixture
async def openai(serve_fake):
    return await serve_fake(FakeOpenAI(reply=REPLY))


@pytest.fixture
async def discord(serve_fake):
    return await serve_fake(FakeDiscord(BOT_TOKEN))


@pytest.fixture
async def settings_overrides(request, openai, discord):
    settings = {
        "discord_public_key": PUBLIC_KEY,
        "discord_api_base_url": discord.base_url,
        **LOCAL_WORKFLOWS,
    }
    return on_openai(openai, **{**settings, **getattr(request, "param", {})})


def ask(interaction_id: str = "1100", question: str = QUESTION, role: str | None = None):
    options = [{"name": "question", "type": 3, "value": question}]
    if role is not None:
        options.append({"name": "role", "type": 3, "value": role})
    return {
        "id": interaction_id,
        "application_id": APPLICATION,
        "type": 2,
        "token": f"interaction-token-{interaction_id}",
        "version": 1,
        "guild_id": "555",
        "channel_id": "666",
        "member": {"user": {"id": "777", "username": "ada", "global_name": "Ada"}},
        "data": {"id": "888", "name": "ask", "type": 1, "options": options},
    }


def seconds_ago(seconds: float) -> str:
    """An X-Signature-Timestamp as Discord sends it: whole Unix seconds."""
    return str(int(time.time() - seconds))


async def post(api, body, *, key: SigningKey | None = KEY, timestamp: str | None = None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    timestamp = seconds_ago(0) if timestamp is None else timestamp
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["X-Signature-Ed25519"] = key.sign(timestamp.encode() + raw).signature.hex()
        headers["X-Signature-Timestamp"] = timestamp
    return await api.post("/webhook/discord", content=raw, headers=headers)


async def test_ping_is_answered_with_pong(api):
    response = await post(api, {"id": "1", "application_id": APPLICATION, "type": 1})
    assert response.status_code == 200
    assert response.json() == {"type": 1}


@pytest.mark.parametrize(
    "signing",
    [
        {"key": None},
        {"key": SigningKey.generate()},
    ],
)
async def test_an_unsigned_or_badly_signed_request_is_401(api, discord, signing):
    response = await post(api, {"type": 1}, **signing)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert (await post(api, ask(), **signing)).status_code == 401
    assert not discord.requests


async def test_a_signature_over_another_body_or_time_is_401(api):
    raw = json.dumps({"type": 1}).encode()
    now = int(time.time())
    signature = KEY.sign(str(now).encode() + raw).signature.hex()
    for headers, body in (
        ({"X-Signature-Timestamp": str(now + 1)}, raw),
        ({"X-Signature-Timestamp": str(now)}, raw + b" "),
    ):
        response = await api.post(
            "/webhook/discord", content=body, headers={"X-Signature-Ed25519": signature, **headers}
        )
        assert response.status_code == 401


TEN_YEARS = 3652 * 86400


@pytest.mark.parametrize(
    ("timestamp", "why"),
    [
        ("1000000000", "behind this server's clock"),  # September 2001
        (seconds_ago(-TEN_YEARS), "ahead of this server's clock"),
        (seconds_ago(6 * 60), "behind this server's clock"),  # a replay six minutes on
        ("yesterday", "not a whole number of Unix seconds"),
        ("1767225600.0", "not a whole number of Unix seconds"),
    ],
    ids=["2001", "ten-years-ahead", "six-minutes-old", "words", "fraction"],
)
async def test_a_validly_signed_request_with_a_stale_timestamp_is_401(
    api, discord, caplog, timestamp, why
):
    caplog.set_level(logging.INFO, "ragio.http.webhooks")
    for body in ({"id": "1", "application_id": APPLICATION, "type": 1}, ask("1200")):
        response = await post(api, body, timestamp=timestamp)
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/problem+json"
        assert "X-Signature-Timestamp" not in response.text  # the log says why, not the client
    assert "refused a discord webhook request: the X-Signature-Timestamp is" in caplog.text
    assert why in caplog.text
    assert not discord.requests  # refused before the delivery is claimed: never answered


async def test_a_request_signed_four_minutes_ago_is_taken(api, discord):
    await add_refunds(api)
    response = await post(api, ask("1300"), timestamp=seconds_ago(4 * 60))
    assert response.status_code == 200
    assert response.json() == {"type": 5}
    [(_, token, _)] = await wait_for(lambda: discord.edits)
    assert token == "interaction-token-1300"


@pytest.mark.parametrize("settings_overrides", [{"discord_public_key": ""}], indirect=True)
async def test_without_a_public_key_everything_is_401(api):
    assert (await post(api, {"type": 1})).status_code == 401


async def test_ask_is_deferred_at_once_then_the_answer_replaces_it_then_workflows(
    api, openai, discord, receiver
):
    await add_refunds(api)
    await add_workflow(api, receiver.url("/dc"), ["discord"])
    openai.chat_delay = DISCORD_ACK_SECONDS + 1  # the model takes longer than Discord waits

    with trio.fail_after(DISCORD_ACK_SECONDS):
        response = await post(api, ask())

    assert response.status_code == 200
    assert response.json() == {"type": 5}
    [(application, token, body)] = await wait_for(lambda: discord.edits)
    assert (application, token) == (APPLICATION, "interaction-token-1100")
    assert body["content"] == f"{REPLY}\n\nSources:\n[1] refunds.md › Returns and refunds"
    assert body["allowed_mentions"] == {"parse": []}
    assert not discord.followups

    [call] = await wait_for(lambda: receiver.requests)
    assert call.body["channel"] == "discord" and call.body["message"] == QUESTION
    assert call.body["ai_reply"] == REPLY
    assert call.body["context"]["sender"] == "777" and call.body["context"]["role"] == "support"
    assert "interaction-token" not in json.dumps(call.body)  # the token is a credential


async def test_the_role_option_reaches_customer_roles_only(api, openai, discord):
    await add_refunds(api)
    assert (await post(api, ask("1", role="sales"))).json() == {"type": 5}
    await wait_for(lambda: discord.edits)
    assert (await post(api, ask("2", role="finance"))).json() == {"type": 5}
    await wait_for(lambda: len(discord.edits) == 2)
    sales, finance = system_prompts(openai)
    assert SALES_VOICE in sales
    assert SUPPORT_VOICE in finance and FINANCE_VOICE not in finance


@pytest.mark.parametrize(
    "body",
    [
        {"type": 2},  # no id, token or application
        {"id": "1", "application_id": APPLICATION, "type": "2", "token": "t"},
        [1, 2],
    ],
)
async def test_a_verified_body_that_is_no_interaction_is_400(api, discord, body):
    response = await post(api, body)
    assert response.status_code == 400
    assert not discord.requests


async def test_a_malformed_json_body_is_400_after_the_signature(api):
    assert (await post(api, b"{nope")).status_code == 400
    assert (await post(api, b"{nope", key=None)).status_code == 401


async def test_a_redelivered_interaction_is_answered_once_even_after_a_restart(
    api, service, discord, nursery
):
    await add_refunds(api)
    assert (await post(api, ask("1100"))).json() == {"type": 5}
    assert (await post(api, ask("1100"))).json() == {"type": 5}
    await wait_for(lambda: discord.edits)
    async with restarted(service, nursery) as again:
        assert (await post(again, ask("1100"))).status_code == 200
        assert (await post(again, ask("1101"))).status_code == 200
        await wait_for(lambda: len(discord.edits) >= 2)
    assert [token for _, token, _ in discord.edits] == [
        "interaction-token-1100",
        "interaction-token-1101",
    ]


async def test_other_commands_are_told_what_the_bot_understands_at_once(api, openai, discord):
    body = ask()
    body["data"] = {"id": "9", "name": "weather", "type": 1}
    response = await post(api, body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["type"] == 4 and "/ask" in answer["data"]["content"]
    assert answer["data"]["flags"] == 64  # only the asker sees it
    assert not discord.requests and not openai.requests


async def test_an_empty_question_gets_the_help_not_an_answer(api, openai, discord):
    assert (await post(api, ask(question="  "))).json() == {"type": 5}
    [(_, _, body)] = await wait_for(lambda: discord.edits)
    assert "answer from our documents" in body["content"]
    assert not openai.requests_to("/v1/chat/completions")


async def test_a_long_answer_edits_the_response_then_follows_up_within_2000(api, openai, discord):
    await add_refunds(api)
    openai.reply = " ".join(f"Point {i} is about returns within 30 days [1]." for i in range(100))
    assert (await post(api, ask())).json() == {"type": 5}
    await wait_for(lambda: discord.edits and len(discord.followups) >= 1)
    contents = [discord.edits[0][2]["content"]] + [b["content"] for _, _, b in discord.followups]
    assert all(len(c) <= 2000 for c in contents)
    assert contents[0].startswith("Point 0 is about")
    await wait_for(lambda: discord.followups[-1][2]["content"].endswith("Returns and refunds"))


async def test_a_provider_failure_replaces_thinking_with_an_apology(api, openai, discord):
    await add_refunds(api)
    openai.fail_next(401)
    assert (await post(api, ask())).json() == {"type": 5}
    [(_, _, body)] = await wait_for(lambda: discord.edits)
    assert "couldn't answer that just now" in body["content"]


async def register_command(monkeypatch, capsys, **settings: str) -> tuple[int, str, str]:
    """`ragchat discord register-command` in this process (its own Trio loop, in a thread:
    the fake Discord answers in this test's loop); a process's start-up would cost more
    than the command."""
    return await trio.to_thread.run_sync(
        lambda: run_in_process(monkeypatch, capsys, "discord", "register-command", **settings)
    )


async def test_register_command_creates_ask_with_the_customer_roles(
    discord, database_url, tmp_path, monkeypatch, capsys
):
    code, out, err = await register_command(
        monkeypatch,
        capsys,
        cwd=tmp_path,
        database_url=database_url,
        discord_application_id=APPLICATION,
        discord_bot_token=BOT_TOKEN,
        discord_api_base_url=discord.base_url,
    )
    assert code == 0, err
    [command] = discord.commands
    assert command["name"] == "ask"
    question, role = command["options"]
    assert question["name"] == "question" and question["required"] is True
    assert [c["value"] for c in role["choices"]] == ["secretary", "sales", "support"]
    assert discord.requests[0].path == f"/applications/{APPLICATION}/commands"
    assert BOT_TOKEN not in out + err


async def test_register_command_needs_the_bot_token(discord, tmp_path, monkeypatch, capsys):
    code, _, err = await register_command(
        monkeypatch,
        capsys,
        cwd=tmp_path,
        discord_application_id=APPLICATION,
        discord_api_base_url=discord.base_url,
    )
    assert code == 2 and "DISCORD_BOT_TOKEN" in err
    assert not discord.requests
