"""A platform delivery is answered once by the replicas on one database: a process that
starts while another is still answering leaves that delivery alone, and one whose process
is gone (a crash: no presence for GONE_AFTER) is answered by another process. Real
`ragchat serve` processes, the fake Bot API and a fake OpenAI whose answer is slow."""

from __future__ import annotations

import json
import signal
from datetime import timedelta

import httpx
import psycopg
import trio

from ragcore.channels.telegram import parse_update
from ragio.channels.updates import claim_delivery, take_unanswered
from ragio.db.migrations import apply_migrations
from ragio.db.presence import GONE_AFTER, alive, end_previous, here
from tests.io.conftest import on_openai
from tests.io.processes import running_service
from tests.io.test_telegram import (  # noqa: F401 (openai and telegram: its fixtures)
    REPLY,
    SECRET,
    TOKEN,
    add_refunds,
    openai,
    post,
    telegram,
    update,
    wait_for,
)

MODEL_SECONDS = 6.0  # how long the fake model takes to answer A's first delivery


def test_a_delivery_is_resumed_only_once_its_process_is_gone(database_url):
    message = parse_update(json.dumps(update(9001)).encode())
    with psycopg.connect(database_url, autocommit=True) as conn:
        apply_migrations(conn)
        now = conn.execute("SELECT now()").fetchone()[0]
        here(conn, "web-1:10:aaaaaa", now)
        assert claim_delivery(conn, message, now, "web-1:10:aaaaaa")
        # web-1 is alive, answering it: web-2 leaves it alone
        assert take_unanswered(conn, now + timedelta(seconds=30), "web-2:20:bbbbbb") == ([], 0)
        later = now + GONE_AFTER + timedelta(seconds=1)  # web-1 went quiet: gone
        taken, given_up = take_unanswered(conn, later, "web-2:20:bbbbbb")
        assert [m.delivery_id for m in taken] == ["9001"] and given_up == 0
        # taken once: neither web-3 nor web-2 again answer it a second time
        assert take_unanswered(conn, later, "web-3:30:cccccc") == ([], 0)
        assert take_unanswered(conn, later, "web-2:20:bbbbbb") == ([], 0)
        claimed_by = conn.execute("SELECT claimed_by FROM channel_updates").fetchone()[0]
        assert claimed_by == "web-2:20:bbbbbb"


def test_a_process_that_starts_ends_its_own_earlier_runs_on_its_machine(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        apply_migrations(conn)
        now = conn.execute("SELECT now()").fetchone()[0]
        for name in ("web-1:10:aaaaaa", "web-1:11:bbbbbb", "web-1:12:cccccc", "web-2:10:dddddd"):
            here(conn, name, now)
        # web-1 again as pid 12: pid 10 runs no more, 11 still runs (another replica), 12
        # is its own pid (a restarted container); web-2 is another machine
        ended = end_previous(conn, "web-1:12:eeeeee", running=lambda pid: pid == 11)
        assert sorted(ended) == ["web-1:10:aaaaaa", "web-1:12:cccccc"]
        assert alive(conn, now) == ["web-1:11:bbbbbb", "web-2:10:dddddd"]


async def test_a_process_killed_and_started_again_takes_over_its_deliveries_at_once(
    openai,  # noqa: F811 (the fixture imported above)
    telegram,  # noqa: F811
    database_url,
    tmp_path,
):
    settings = on_openai(
        openai,
        database_url=database_url,
        telegram_bot_token=TOKEN,
        telegram_webhook_secret=SECRET,
        telegram_api_base_url=telegram.base_url,
    )
    openai.chat_delay = 60
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    serving_a = running_service(tmp_path / "a", **settings)
    process_a, url_a = await trio.to_thread.run_sync(serving_a.__enter__)
    async with httpx.AsyncClient(base_url=url_a, timeout=30) as client:
        await add_refunds(client)
        assert (await post(client, update(9201))).status_code == 200
    await wait_for(lambda: openai.requests_to("/v1/chat/completions"), 30)  # A is answering
    [(name_a,)] = rows(database_url, "SELECT name FROM service_processes")
    process_a.send_signal(signal.SIGKILL)
    await trio.to_thread.run_sync(serving_a.__exit__, None, None, None)
    # started again on the same machine at once: A's row is fresh, yet its delivery is
    # answered now, not once A is GONE_AFTER unseen
    openai.chat_delay = 0
    serving_b = running_service(tmp_path / "b", **settings)
    await trio.to_thread.run_sync(serving_b.__enter__)
    answered_9201 = (
        "SELECT claimed_by FROM channel_updates "
        "WHERE delivery_id = '9201' AND answered_at IS NOT NULL"
    )
    try:
        [sent] = await wait_for(lambda: telegram.sent, 20)
        assert sent["text"].startswith(REPLY)
        # marked answered just after the reply went out (and the turn was recorded)
        [(claimed_by,)] = await wait_for(lambda: rows(database_url, answered_9201), 10)
    finally:
        await trio.to_thread.run_sync(serving_b.__exit__, None, None, None)
    assert claimed_by != name_a


async def test_two_processes_answer_each_delivery_once_a_crash_included(
    openai,  # noqa: F811 (the fixture imported above)
    telegram,  # noqa: F811
    database_url,
    tmp_path,
):
    settings = on_openai(
        openai,
        database_url=database_url,
        telegram_bot_token=TOKEN,
        telegram_webhook_secret=SECRET,
        telegram_api_base_url=telegram.base_url,
    )

    async def start(name: str):
        (tmp_path / name).mkdir()
        serving = running_service(tmp_path / name, **settings)
        process, base_url = await trio.to_thread.run_sync(serving.__enter__)
        return serving, process, base_url

    async def stop(serving) -> None:
        await trio.to_thread.run_sync(serving.__exit__, None, None, None)

    # 1. A is answering slowly when B starts: B does not answer it too
    serving_a, process_a, url_a = await start("a")
    async with httpx.AsyncClient(base_url=url_a, timeout=30) as client:
        await add_refunds(client)
        openai.chat_delay = MODEL_SECONDS
        assert (await post(client, update(9101))).status_code == 200
    await wait_for(lambda: openai.requests_to("/v1/chat/completions"), 30)  # A is answering
    serving_b, _, _ = await start("b")
    [sent] = await wait_for(lambda: telegram.sent, 30)  # A's answer, once the model spoke
    assert sent["text"].startswith(REPLY)
    await trio.sleep(1)
    assert len(telegram.sent) == 1
    await stop(serving_b)

    # 2. A is killed while answering; once it is gone, the next process answers it, once
    openai.chat_delay = 60
    async with httpx.AsyncClient(base_url=url_a, timeout=30) as client:
        assert (await post(client, update(9102))).status_code == 200
    await wait_for(lambda: len(openai.requests_to("/v1/chat/completions")) == 2, 30)
    [(name_a,)] = rows(database_url, "SELECT name FROM service_processes")
    process_a.send_signal(signal.SIGKILL)
    await stop(serving_a)
    with psycopg.connect(database_url, autocommit=True) as conn:  # GONE_AFTER has passed
        conn.execute(
            "UPDATE service_processes SET seen_at = seen_at - %s WHERE name = %s",
            (GONE_AFTER * 2, name_a),
        )
    openai.chat_delay = 0
    serving_c, _, _ = await start("c")
    await wait_for(lambda: len(telegram.sent) == 2, 30)
    await trio.sleep(1)
    await stop(serving_c)
    assert len(telegram.sent) == 2
    [(claimed_by, answered)] = rows(
        database_url,
        "SELECT claimed_by, answered_at IS NOT NULL FROM channel_updates "
        "WHERE delivery_id = '9102'",
    )
    assert claimed_by != name_a and answered


def rows(database_url: str, sql: str) -> list[tuple]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql).fetchall()
