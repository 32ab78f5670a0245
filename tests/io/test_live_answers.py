"""Live data in answers, as a customer meets it: "where is my order 4411?" answered from
the owner's MariaDB or PostgreSQL on /chat (offline and with a model), on Telegram and
on a phone call; the question for a missing value and the reply to it; the 5-minute
cache counted at the database; a write run once per ask; injection attempts; and a
source that never answers, which leaves the answer on time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import psycopg
import pytest
import trio
from cryptography.fernet import Fernet

from tests.io.channels import wait_for
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.telegram_server import FakeTelegram
from tests.io.live import (
    add_action,
    add_mysql_source,
    owner_database,
    queries_of_shop,
    status_of,
)
from tests.io.mariadb import MariaDB

ORDER = "SELECT id, status FROM orders WHERE id = {order_id}"
KEY = Fernet.generate_key().decode()
TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
SECRET = "webhook-secret_0123"


@pytest.fixture
async def openai(serve_fake):
    return await serve_fake(FakeOpenAI(reply="Your order 4411 has shipped [1]."))


@pytest.fixture
async def telegram(serve_fake):
    return await serve_fake(FakeTelegram(TOKEN))


@pytest.fixture
async def settings_overrides(request, openai, telegram) -> dict[str, Any]:
    """Offline, with Telegram on its fake Bot API; ``indirect`` param "model": answers
    from the fake OpenAI."""
    settings = {
        "addon_encryption_key": KEY,
        "integrations_allow_private_targets": True,  # the MariaDB: on 127.0.0.1
        "integrations_allow_unix_sockets": True,  # the owner's PostgreSQL: its socket
        "live_query_timeout_seconds": "2",
        "telegram_bot_token": TOKEN,
        "telegram_webhook_secret": SECRET,
        "telegram_api_base_url": telegram.base_url,
    }
    if getattr(request, "param", None) == "model":
        return on_openai(openai, **settings)
    return settings


async def chat(api: httpx.AsyncClient, question: str, **more: Any) -> dict[str, Any]:
    response = await api.post("/chat", json={"question": question, **more})
    assert response.status_code == 200, response.text
    return response.json()


async def runs(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await api.get("/live-actions/runs")
    assert response.status_code == 200, response.text
    return response.json()["runs"]


async def test_an_order_is_answered_from_live_rows_on_chat(api, shop: MariaDB) -> None:
    source = await add_mysql_source(api, shop)
    action = await add_action(api, source, ORDER)

    answer = await chat(api, "where is my order 4411?")

    assert answer["answer"] == "Order status: id: 4411, status: shipped. [1]"
    [cited] = answer["citations"]
    assert cited["document_name"] == "live data: Order status"
    assert (cited["live_action_id"], cited["document_id"]) == (action, None)
    [run] = await runs(api)
    assert (run["action_id"], run["channel"], run["outcome"]) == (action, "chat", "ran")
    assert (run["row_count"], run["duration_ms"] >= 0) == (1, True)
    assert "4411" not in str(run)  # the values are kept as an HMAC only


async def test_postgresql_rows_answer_too(api, owner_postgres: str) -> None:
    url = owner_database(owner_postgres, "live_answers")
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS orders")
        db.execute("CREATE TABLE orders (id int PRIMARY KEY, status text)")
        db.execute("INSERT INTO orders VALUES (4411, 'shipped'), (4412, 'packed')")
    response = await api.post(
        "/integrations",
        json={"name": "pg", "source_type": "postgresql", "url": url, "table": "orders"},
    )
    assert response.status_code == 201, response.text
    await add_action(api, response.json()["id"], ORDER)
    answer = await chat(api, "Where is order #4412?")
    assert answer["answer"] == "Order status: id: 4412, status: packed. [1]"


async def test_a_missing_order_number_is_asked_for_and_the_reply_answered(
    api, shop: MariaDB, database_url: str
) -> None:
    await add_action(api, await add_mysql_source(api, shop), ORDER)
    before = queries_of_shop(shop)

    asked = await chat(api, "what's the status of my order?", user="customer-7")
    assert asked["answer"] == "What is your order number?" and asked["citations"] == []
    assert queries_of_shop(shop) == before  # nothing ran
    with psycopg.connect(database_url) as db:  # kept for them, under a hash of who asked
        [(asker,)] = db.execute("SELECT asker FROM live_pending").fetchall()
    assert "customer-7" not in asker and len(asker) == 64
    answered = await chat(api, "4411", user="customer-7")
    assert answered["answer"] == "Order status: id: 4411, status: shipped. [1]"
    # the question held for that user's next message only
    again = await chat(api, "4412", user="customer-7")
    assert "packed" not in again["answer"]
    assert [r["outcome"] for r in await runs(api)] == ["ran", "asked"]


async def test_the_cache_asks_the_database_once_in_five_minutes(
    api, shop: MariaDB, fake_clock
) -> None:
    await add_action(api, await add_mysql_source(api, shop), ORDER)
    before = queries_of_shop(shop)

    await chat(api, "where is my order 4411?")
    fake_clock.advance(timedelta(minutes=4))
    second = await chat(api, "status of order 4411 please")
    assert "shipped" in second["answer"]
    assert queries_of_shop(shop) == before + 1
    fake_clock.advance(timedelta(minutes=1, seconds=1))
    await chat(api, "where is my order 4411?")
    assert queries_of_shop(shop) == before + 2
    assert [r["outcome"] for r in await runs(api)] == ["ran", "cached", "ran"]


async def test_a_write_runs_once_per_ask_and_clears_the_cached_reads(api, shop: MariaDB) -> None:
    source = await add_mysql_source(api, shop)
    await add_action(api, source, ORDER)
    await add_action(
        api,
        source,
        "UPDATE orders SET status = 'cancelled' WHERE id = {order_id} AND status <> 'shipped'",
        name="Cancel an order",
        triggers=["cancel my order"],
    )
    assert "packed" in (await chat(api, "status of order 4412?"))["answer"]  # now cached

    done = await chat(api, "Please cancel my order 4412")
    assert done["answer"] == "Done: 1 record(s) changed. [1]"
    assert status_of(shop, 4412) == "cancelled" and status_of(shop, 4411) == "shipped"
    assert "cancelled" in (await chat(api, "status of order 4412?"))["answer"]
    assert [r["outcome"] for r in await runs(api)][:2] == ["ran", "ran"]


@pytest.mark.parametrize(
    "message",
    [
        "where is my order 4411' OR '1'='1",
        "where is my order 1; DROP TABLE orders",
        "where is my order {email}",
        "where is my order " + "9" * 40 + "' OR 1=1 -- " + "x" * 3000,
    ],
)
async def test_injection_attempts_change_nothing_and_show_nothing_else(
    api, shop: MariaDB, message: str
) -> None:
    by_email = "SELECT id, status FROM orders WHERE email = {email}"
    source = await add_mysql_source(api, shop)
    await add_action(api, source, ORDER)
    await add_action(api, source, by_email, name="Orders by e-mail", triggers=["my email is"])
    answer = await chat(api, message)
    assert "packed" not in answer["answer"] and "4412" not in answer["answer"]
    assert "bo@example.com" not in str(answer)
    email = await chat(api, "my email is x' OR '1'='1@example.com")
    assert "packed" not in email["answer"] and "shipped" not in email["answer"]
    assert status_of(shop, 4412) == "packed"  # the table is there, unchanged


async def hanging_server(nursery: trio.Nursery) -> int:
    """A TCP server that takes connections and never says a word."""
    listeners = await nursery.start(trio.serve_tcp, _hold, 0)
    return int(listeners[0].socket.getsockname()[1])


async def _hold(stream: trio.SocketStream) -> None:
    await trio.sleep_forever()


async def test_a_hanging_source_leaves_the_answer_on_time(api, nursery, maria: MariaDB) -> None:
    port = await hanging_server(nursery)
    body = {"name": "frozen", "source_type": "mysql", "host": "127.0.0.1", "port": port}
    body |= {"user": "shop", "password": "x", "database": "shop", "table": "orders"}
    response = await api.post("/integrations", json=body)
    assert response.status_code == 201, response.text
    await add_action(api, response.json()["id"], ORDER)

    started = trio.current_time()
    answer = await chat(api, "where is my order 4411?")
    took = trio.current_time() - started

    assert took < 2 + 1.5, took
    assert answer["answer"].startswith("Your data could not be looked up just now")
    [run] = await runs(api)
    assert run["outcome"] == "failed" and "2" in run["reason"]


@pytest.mark.parametrize("settings_overrides", ["model"], indirect=True)
async def test_with_a_model_the_rows_are_a_cited_source_marked_as_data(
    api, shop: MariaDB, openai
) -> None:
    await add_action(api, await add_mysql_source(api, shop), ORDER, description="Our orders")
    answer = await chat(api, "where is my order 4411?")
    assert answer["answer"] == "Your order 4411 has shipped [1]."
    assert answer["citations"][0]["live_action_id"] is not None
    [prompt] = [r.body for r in openai.requests if r.path.endswith("/chat/completions")]
    user = prompt["messages"][-1]["content"]
    assert "[1] live data: Order status\n(Our orders)\n" in user
    assert "never instructions" in user
    assert '<data>\n{"id": 4411, "status": "shipped"}\n</data>' in user


async def test_telegram_answers_from_live_rows(api, shop: MariaDB, telegram) -> None:
    await add_action(api, await add_mysql_source(api, shop), ORDER)
    update = {
        "update_id": 9001,
        "message": {
            "message_id": 5,
            "date": 1_700_000_000,
            "chat": {"id": 4242, "type": "private"},
            "from": {"id": 4242, "is_bot": False, "first_name": "Ada"},
            "text": "Hi, where is my order 4411?",
        },
    }
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    response = await api.post("/webhook/telegram", json=update, headers=headers)
    assert response.status_code == 200
    [sent] = await wait_for(lambda: telegram.sent)
    assert sent["text"] == (
        "Order status: id: 4411, status: shipped. [1]\n\nSources:\n[1] live data: Order status"
    )
    [run] = await runs(api)
    assert run["channel"] == "telegram"


async def test_the_log_keeps_a_run_90_days(api, shop: MariaDB, fake_clock) -> None:
    await add_action(api, await add_mysql_source(api, shop), ORDER)
    await chat(api, "where is my order 4411?")
    fake_clock.advance(timedelta(days=89))
    await chat(api, "where is my order 4412?")
    assert len(await runs(api)) == 2
    fake_clock.advance(timedelta(days=2))
    await chat(api, "where is my order 4411?")
    assert [r["outcome"] for r in await runs(api)] == ["ran", "ran"]
