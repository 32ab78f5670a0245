"""Replicas (issue 18): two real `ragchat serve` processes on one database, raced.

Any number of API processes share one PostgreSQL: each promise below is kept by the
database (an advisory lock, a unique key, a conditional UPDATE), never by one process's
memory. Both processes are started once for the module, at the same moment, on an empty
database of their own, with instant fake providers (OpenAI, the Telegram Bot API, a
chat-ops receiver over https) served from a thread of this process; each test then sends
the same thing to both at the same moment and counts what a user would notice: answers,
rows, calls received.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
import pytest
import trio

from ragcore.usage import LIMIT_REACHED
from ragio.db.embedded import EmbeddedPostgres
from ragio.db.migrations import SCHEMA_LOCK, migration_files
from tests.io.channels import QUESTION, REFUNDS, REPLY, wait_for
from tests.io.conftest import serving
from tests.io.fakes.action_receivers import CertAuthority, serve_https
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.telegram_server import FakeTelegram
from tests.io.fakes.workflow_receiver import WorkflowReceiver
from tests.io.processes import running_service

TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
SECRET = "webhook-secret_0123"
SALES_CAP = 1200  # BUDGET_ROLE_DAILY_OVERRIDES: the only cap, on the sales role


class Fakes:
    """The fake providers, served by Hypercorn in a Trio loop of their own in a thread, so
    they outlive each test's loop and both service processes can be started once."""

    def __init__(self, folder: Path) -> None:
        self.authority = CertAuthority(folder)
        self.openai: FakeOpenAI
        self.telegram: FakeTelegram
        self.chatops: WorkflowReceiver
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="replica-fakes", daemon=True)

    def __enter__(self) -> Fakes:
        self._thread.start()
        self._ready.wait(30)
        if self._failed is not None or not self._ready.is_set():
            raise RuntimeError("the fake providers did not start") from self._failed
        return self

    def __exit__(self, *exc: object) -> None:
        trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(30)

    def _run(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # reported by __enter__
            self._failed = exc
            self._ready.set()

    async def _serve(self) -> None:
        self.openai = FakeOpenAI(reply=REPLY)
        self.telegram = FakeTelegram(TOKEN)
        self.chatops = WorkflowReceiver()
        self._stop = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            await stack.enter_async_context(serving(self.openai, nursery))
            await stack.enter_async_context(serving(self.telegram, nursery))
            port = await stack.enter_async_context(
                serve_https(self.chatops, nursery, self.authority, "127.0.0.1")
            )
            self.chatops.base_url = f"https://127.0.0.1:{port}"
            self._ready.set()
            await self._stop.wait()


@attrs.define
class Replica:
    url: str
    log: list[str]  # its output, line by line, read by a thread as it comes
    process: subprocess.Popen


@attrs.define
class Replicas:
    database_url: str
    fakes: Fakes
    a: Replica
    b: Replica
    gated: bool  # both started migrating at the same moment (both waited for the lock)

    @property
    def both(self) -> tuple[Replica, Replica]:
        return self.a, self.b

    def query(self, sql: str, *params: Any) -> list[tuple]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, params).fetchall()

    def errors(self) -> list[str]:
        """Lines of either process's log that report an error (a 500 logs its traceback)."""
        return [
            line
            for replica in self.both
            for line in replica.log
            if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")
        ]


def waiting_for_schema_lock(conn: psycopg.Connection) -> int:
    """How many sessions wait for the migrations' advisory lock (a bigint key: its high and
    low 32 bits are classid and objid)."""
    [(count,)] = conn.execute(
        """SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
              AND classid::bigint = %s AND objid::bigint = %s
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())""",
        (SCHEMA_LOCK >> 32, SCHEMA_LOCK & 0xFFFFFFFF),
    ).fetchall()
    return int(count)


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fakes]:
    with Fakes(tmp_path_factory.mktemp("replica-ca")) as served:
        yield served


@pytest.fixture(scope="module")
def replicas(
    embedded_server: EmbeddedPostgres, fakes: Fakes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Replicas]:
    """Two `ragchat serve` processes started at the same moment on one new, empty database."""
    with started_replicas(embedded_server, fakes, tmp_path_factory) as both:
        yield both


@contextmanager
def started_replicas(
    embedded_server: EmbeddedPostgres,
    fakes: Fakes,
    tmp_path_factory: pytest.TempPathFactory,
    **environment: object,
) -> Iterator[Replicas]:
    """Two `ragchat serve` processes started at the same moment on one new, empty database,
    with ``environment`` besides their settings; both stopped on the way out."""
    name = f"test_replicas_{uuid.uuid4().hex[:8]}"
    database_url = embedded_server.create_database(name)
    settings = {
        "database_url": database_url,
        "openai_api_key": fakes.openai.api_key,
        "openai_base_url": fakes.openai.base_url,
        "embedding_dimensions": 64,
        "usage_ledger": "true",
        "budget_role_daily_overrides": f"sales={SALES_CAP}",
        "telegram_bot_token": TOKEN,
        "telegram_webhook_secret": SECRET,
        "telegram_api_base_url": fakes.telegram.base_url,
        "chatops_webhook_url": f"{fakes.chatops.base_url}/hook",
        "actions_ca_bundle": str(fakes.authority.bundle),
        "actions_allow_private_targets": "true",
        **environment,
    }
    services = []
    for n in (1, 2):
        folder = tmp_path_factory.mktemp(f"replica-{n}")
        services.append(running_service(folder, data_dir=folder / "data", **settings))
    started: list[Any] = [None, None]
    failures: list[BaseException] = []

    def start(n: int) -> None:
        try:
            started[n] = services[n].__enter__()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(n,)) for n in (0, 1)]
    # The schema lock held here until both processes wait for it: then they go at once.
    with psycopg.connect(database_url, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK,))
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(t.is_alive() for t in threads):
            if waiting_for_schema_lock(gate) == 2:
                gated = True
                break
            time.sleep(0.02)
        else:
            gated = False
        gate.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))
    for thread in threads:
        thread.join()
    readers = []
    try:
        if failures:
            raise failures[0]
        replicas = []
        for process, url in started:
            log: list[str] = []
            reader = threading.Thread(
                target=lambda p=process, log=log: log.extend(p.stdout), daemon=True
            )
            reader.start()
            readers.append(reader)
            replicas.append(Replica(url, log, process))
        with httpx.Client(timeout=30) as client:  # the knowledge every answer cites
            added = client.post(
                f"{replicas[0].url}/documents", json={"name": "refunds.md", "text": REFUNDS}
            )
            assert added.status_code == 201, added.text
        yield Replicas(database_url, fakes, *replicas, gated)
    finally:
        stopping = [  # both stopped at once (SIGTERM, then up to 30 s each)
            threading.Thread(target=service.__exit__, args=(None, None, None))
            for service, was_started in zip(services, started, strict=True)
            if was_started is not None
        ]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()
        for reader in readers:
            reader.join(30)
        embedded_server.drop_database(name)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as http:
        yield http


async def at_once(*calls: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Run the calls at the same moment; their results, in order."""
    results: list[Any] = [None] * len(calls)

    async def one(n: int) -> None:
        results[n] = await calls[n]()

    async with trio.open_nursery() as nursery:
        for n in range(len(calls)):
            nursery.start_soon(one, n)
    return results


def blocked_sessions(conn: psycopg.Connection) -> int:
    """How many sessions of this database wait for a lock."""
    [(count,)] = conn.execute(
        """SELECT count(DISTINCT pid) FROM pg_locks
            WHERE NOT granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"""
    ).fetchall()
    return int(count)


async def released_together(
    replicas: Replicas, table: str, *calls: Callable[[], Awaitable[Any]], waiting: int = 16
) -> list[Any]:
    """Run the calls at the same moment with ``table`` locked against writes until
    ``waiting`` sessions wait on the database (16: every pooled connection of both
    processes, 8 each), then let them all go at once: the worst timing for a rule that
    reads before it writes."""
    results: list[Any] = [None] * len(calls)

    async def one(n: int) -> None:
        results[n] = await calls[n]()

    with psycopg.connect(replicas.database_url) as gate:
        gate.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")  # reads go on, writes wait
        async with trio.open_nursery() as nursery:
            for n in range(len(calls)):
                nursery.start_soon(one, n)
            await wait_for(lambda: blocked_sessions(gate) == waiting, 30)
            gate.rollback()
    return results


# ---------------------------------------------------------------- 1. migrations once


def test_two_processes_starting_together_migrate_once(replicas):
    """Both started at the same moment on an empty database, both waiting for the
    migrations at once (the fixture holds their lock until both wait for it), both
    healthy, every migration applied once, by one of them, and no error in either log."""
    assert replicas.gated, "the two processes did not both wait for the migrations' lock"
    shipped = [(version, name) for version, name, _ in migration_files()]
    applied = replicas.query("SELECT version, name FROM schema_migrations ORDER BY version")
    assert applied == shipped
    for version, name in shipped:
        line = f"applied migration {version:03d}_{name}"
        by = [r for r in replicas.both if any(line in entry for entry in r.log)]
        assert len(by) == 1, f"{line}: logged by {len(by)} processes"
    assert replicas.errors() == []


# ---------------------------------------------------------------- 2. a document once


def upload(
    client: httpx.AsyncClient, url: str, name: str, text: str, replace: str = "false"
) -> Callable[[], Awaitable[httpx.Response]]:
    files = {"file": (name, text.encode(), "text/markdown")}
    return lambda: client.post(f"{url}/documents", files=files, data={"replace": replace})


async def test_a_file_uploaded_to_both_at_once_is_stored_once(replicas, client):
    """The same file to both processes at the same moment, in several rounds: one stores
    it (201), the other answers that it is a duplicate of that document (200), and one
    document holds the name and the content. Then a new version of a stored document to
    both at once: it replaces the old one once."""
    a, b = replicas.both
    replicas.fakes.openai.delay = 0.2  # both are embedding when either stores
    try:
        for n in range(4):
            name, text = f"shelving-{n}.md", f"# Shelving {n}\n\nPallet racks hold {n} crates."
            first, second = await at_once(*(upload(client, r.url, name, text) for r in (a, b)))
            stored, duplicate = sorted((first, second), key=lambda r: r.status_code, reverse=True)
            assert (stored.status_code, duplicate.status_code) == (201, 200), (
                first.text,
                second.text,
            )
            assert stored.json()["duplicate"] is False and duplicate.json()["duplicate"] is True
            assert duplicate.json()["id"] == stored.json()["id"]
            listed = (await client.get(f"{a.url}/documents", params={"q": name})).json()
            assert [d["id"] for d in listed["documents"]] == [stored.json()["id"]]

        old = await upload(client, a.url, "racks.md", "# Racks\n\nRacks are blue.")()
        assert old.status_code == 201
        new_text = "# Racks\n\nRacks are painted green now."
        first, second = await at_once(
            *(upload(client, r.url, "racks.md", new_text, "true") for r in (a, b))
        )
    finally:
        replicas.fakes.openai.delay = 0.0
    statuses = sorted([first.status_code, second.status_code])
    assert statuses == [200, 201], (first.text, second.text)
    stored = first if first.status_code == 201 else second
    other = second if stored is first else first
    assert [d["id"] for d in stored.json()["replaced"]] == [old.json()["id"]]
    assert other.json()["duplicate"] is True and other.json()["id"] == stored.json()["id"]
    rows = replicas.query("SELECT id, text FROM documents WHERE name = 'racks.md'")
    assert rows == [(stored.json()["id"], new_text)]
    assert replicas.errors() == []


# ---------------------------------------------------------------- 3. budgets


def sales_tokens(replicas: Replicas) -> tuple[int, int]:
    """(tokens settled, rows still reserved) of the sales role in the ledger."""
    [(used, held)] = replicas.query(
        """SELECT coalesce(sum(prompt_tokens + completion_tokens)
                           FILTER (WHERE state = 'settled'), 0),
                  count(*) FILTER (WHERE state = 'reserved')
             FROM usage_records WHERE role = 'sales'"""
    )
    return int(used), int(held)


def tokens(answer: dict) -> int:
    return answer["usage"]["prompt_tokens"] + answer["usage"]["completion_tokens"]


async def test_many_answers_at_once_through_both_never_pass_the_cap(replicas, client):
    """Twenty questions to the sales role at once, ten through each process, under a
    1,200-token daily cap of that role (about 400 tokens an answer). Every reservation is
    made to wait at the same moment (the ledger's table locked here until every pooled
    connection of both processes waits), then let go at once: each call reserves under
    one database lock, so the tokens settled never pass the cap (the provider counts fewer
    tokens than the hold's estimate); the others are told the limit was reached, without
    calling the provider."""
    openai = replicas.fakes.openai
    calls_before = len(openai.requests_to("/v1/chat/completions"))
    params = {"question": QUESTION, "role": "sales"}
    replies = await released_together(
        replicas,
        "usage_records",
        *(
            partial(client.post, f"{r.url}/chat", params=params)
            for r in replicas.both
            for _ in range(10)
        ),
    )
    assert [r.status_code for r in replies] == [200] * 20
    bodies = [r.json() for r in replies]
    answered = [b for b in bodies if not b["limited"]]
    limited = [b for b in bodies if b["limited"]]
    assert all(b["answer"] == LIMIT_REACHED for b in limited)
    assert all(b["answer"] == REPLY for b in answered)
    used, held = sales_tokens(replicas)
    assert held == 0
    assert used == sum(tokens(b) for b in answered)
    assert used <= SALES_CAP
    per_answer = max(tokens(b) for b in answered)
    assert len(answered) >= SALES_CAP // per_answer - 1 and limited  # what fits, no more
    assert len(openai.requests_to("/v1/chat/completions")) - calls_before == len(answered)
    usage = (await client.get(f"{replicas.b.url}/usage")).json()
    [sales] = [row for row in usage["this_month_by_role"] if row["role"] == "sales"]
    assert sales["total_tokens"] == used
    assert replicas.errors() == []


# ---------------------------------------------------------------- 4. an approval once


async def test_an_approval_sent_to_both_at_once_is_decided_once(replicas, client):
    """A held chat-ops action approved through one process while the other approves or
    rejects it, at the same moment (both decisions held at the actions table until both
    wait, then let go): one decision wins (200), the other is told it was already decided
    (409), and the receiver gets the action once, or never when the rejection won."""
    a, b = replicas.both
    autonomy = await client.post(f"{a.url}/autonomy", json={"mode": "semi"})
    assert autonomy.status_code == 200, autonomy.text
    chatops = replicas.fakes.chatops
    for n, other in enumerate(["approve", "reject", "approve", "reject"]):
        text = f"Refund order {n} for Ann"
        held = await client.post(f"{b.url}/actions", json={"kind": "chatops", "text": text})
        assert held.status_code == 202, held.text
        action_id = held.json()["id"]
        first, second = await released_together(  # both read it pending, then decide
            replicas,
            "actions",
            partial(client.post, f"{a.url}/autonomy/pending/{action_id}/approve"),
            partial(client.post, f"{b.url}/autonomy/pending/{action_id}/{other}"),
            waiting=2,
        )
        assert sorted([first.status_code, second.status_code]) == [200, 409], (
            first.text,
            second.text,
        )
        winner = first if first.status_code == 200 else second
        loser = second if winner is first else first
        assert loser.headers["content-type"] == "application/problem+json"
        assert "already" in loser.json()["detail"]
        status = winner.json()["status"]
        assert status in ("executed", "rejected")
        shown = (await client.get(f"{a.url}/actions/{action_id}")).json()
        assert shown["status"] == status
        received = [r.body for r in chatops.requests if r.body == {"text": text}]
        assert len(received) == (1 if status == "executed" else 0)
        events = replicas.query(
            "SELECT event FROM action_log WHERE action_id = %s AND event IN "
            "('approved', 'rejected', 'executed', 'failed')",
            action_id,
        )
        assert sorted(e for (e,) in events) == (
            ["approved", "executed"] if status == "executed" else ["rejected"]
        )
    assert replicas.errors() == []


# ---------------------------------------------------------------- 5. an update answered once


def telegram_update(update_id: int, chat: int) -> dict:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_700_000_000,
            "chat": {"id": chat, "type": "private"},
            "from": {"id": chat, "is_bot": False, "first_name": "Ada"},
            "text": QUESTION,
        },
    }


CHANNEL_GAUGES = ("ragchat_channel_answers_in_progress ", "ragchat_channel_answers_waiting ")


async def quiet(replicas: Replicas, client: httpx.AsyncClient) -> bool:
    """No channel message being answered, nor waiting, in either process."""
    values = []
    for replica in replicas.both:
        metrics = (await client.get(f"{replica.url}/metrics")).text
        values += [
            float(m.split()[-1]) for m in metrics.splitlines() if m.startswith(CHANNEL_GAUGES)
        ]
    assert len(values) == 4, "each process shows both gauges"
    return not any(values)


async def test_a_telegram_update_delivered_to_both_at_once_is_answered_once(replicas, client):
    """Each update delivered to both processes at the same moment, twice (Telegram
    retrying while the first delivery was in flight): both acknowledge every delivery,
    and the customer gets one answer per update."""
    chat = 8808
    telegram = replicas.fakes.telegram
    updates = list(range(9001, 9006))

    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    deliveries = [
        lambda url=r.url, body=telegram_update(u, chat): client.post(
            f"{url}/webhook/telegram", json=body, headers=headers
        )
        for u in updates
        for r in (*replicas.both, *replicas.both)
    ]
    acknowledged = await at_once(*deliveries)
    assert [r.status_code for r in acknowledged] == [200] * len(deliveries)

    def answers() -> dict[int, int]:
        mine = [s for s in list(telegram.sent) if s["chat_id"] == chat]
        return {u: sum(s["reply_parameters"]["message_id"] == u for s in mine) for u in updates}

    await wait_for(lambda: all(answers().values()), 30)
    with trio.fail_after(30):  # every answer given, none still being made in either process
        while not await quiet(replicas, client):
            await trio.sleep(0.05)
    assert answers() == {u: 1 for u in updates}
    assert all(s["text"].startswith(REPLY) for s in telegram.sent if s["chat_id"] == chat)
    rows = replicas.query(
        "SELECT delivery_id FROM channel_updates WHERE channel = 'telegram' "
        "AND answered_at IS NOT NULL ORDER BY delivery_id"
    )
    assert [d for (d,) in rows] == [str(u) for u in updates]
    assert replicas.errors() == []


# ---------------------------------------------------------------- 6. learning


def ask_as(
    client: httpx.AsyncClient, url: str, role: str, user: str
) -> Callable[[], Awaitable[httpx.Response]]:
    params = {"question": QUESTION, "role": role, "user": user}
    return lambda: client.post(f"{url}/chat", params=params)


async def learned(client: httpx.AsyncClient, url: str, role: str) -> list[str]:
    response = await client.get(
        f"{url}/employees/{role}/memory", params={"tags": "frequent-question"}
    )
    assert response.status_code == 200, response.text
    return [item["text"] for item in response.json()["memory"]]


async def test_learning_counts_each_asker_once_across_processes(replicas, client):
    """Two people each asking through both processes at once are two askers, not four:
    nothing is learned until a third person asks, and then one pattern. One person's
    questions recorded at the same moment through both (released together) stop at the
    daily limit. Three people asking at the same moment through both: the pattern is
    learned once."""
    a, b = replicas.both
    pattern = f'People often ask: "{QUESTION}". It is answered in: refunds.md.'

    replies = await at_once(
        *(ask_as(client, r.url, "operations", who) for who in ("ann", "bob") for r in (a, b, a, b))
    )
    assert all(not r.json()["limited"] and r.json()["citations"] for r in replies)
    assert await learned(client, a.url, "operations") == []
    await ask_as(client, b.url, "operations", "cy")()
    assert await learned(client, a.url, "operations") == [pattern]

    # one person, 10 questions, then 16 more through both at the same moment: 20 recorded
    await at_once(*(ask_as(client, r.url, "marketing", "dan") for r in (a, b) for _ in range(5)))
    await released_together(
        replicas,
        "role_interactions",
        *(ask_as(client, r.url, "marketing", "dan") for r in (a, b) for _ in range(8)),
    )
    [(recorded,)] = replicas.query(
        "SELECT count(*) FROM role_interactions WHERE role = 'marketing'"
    )
    assert recorded == 20

    # three people asking at the same moment, each twice through both: learned once
    await at_once(
        *(
            ask_as(client, r.url, "secretary", who)
            for who in ("eve", "fay", "gus")
            for r in (a, b, a, b)
        )
    )
    assert await learned(client, b.url, "secretary") == [pattern]
    assert replicas.errors() == []


# ---------------------------------------------------------------- the chat widget

SHOP = "https://shop.example.com"


async def widget_site(client: httpx.AsyncClient, url: str, **fields: Any) -> dict[str, Any]:
    body = {"allowed_origins": [SHOP], "tokens_per_day": 0, **fields}
    created = await client.post(f"{url}/widget/sites", json=body)
    assert created.status_code == 201, created.text
    return created.json()


async def visitor_token(client: httpx.AsyncClient, url: str, site: dict[str, Any]) -> str:
    started = await client.post(
        f"{url}/widget/sessions", json={"site": site["public_id"]}, headers={"Origin": SHOP}
    )
    assert started.status_code == 201, started.text
    return str(started.json()["token"])


def widget_question(
    client: httpx.AsyncClient, url: str, token: str, address: str
) -> Callable[[], Awaitable[httpx.Response]]:
    headers = {"Authorization": f"Bearer {token}", "Origin": SHOP, "X-Forwarded-For": address}
    return lambda: client.post(
        f"{url}/widget/chat/stream", json={"question": QUESTION}, headers=headers
    )


def support_tokens(replicas: Replicas) -> int:
    """The tokens the answers of the support role (the widget's) spent, by the ledger."""
    [(total,)] = replicas.query(
        """SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM usage_records
            WHERE state = 'settled' AND role = 'support'"""
    )
    return int(total)


async def test_the_widget_quotas_hold_exactly_with_50_visitors_through_both(replicas, client):
    """50 visitors of one address ask at the same moment, through both processes: the
    address's hourly quota answers exactly its number, not one over; then one visitor asks
    50 times at once from 50 addresses: exactly its daily number; then a site whose
    tokens of the day fit a few questions: what the answers spent stays under it."""
    a, b = replicas.both
    replicas.fakes.openai.delay = 0.05  # the questions overlap, as a busy page's do
    try:
        site = await widget_site(client, a.url, name="quota-address", ip_questions_per_hour=20)
        tokens = [await visitor_token(client, r.url, site) for r in (a, b) * 25]
        answered = await at_once(
            *(
                widget_question(client, r.url, token, "198.51.100.20")
                for r, token in zip((a, b) * 25, tokens, strict=True)
            )
        )
        statuses = [r.status_code for r in answered]
        assert (statuses.count(200), statuses.count(429)) == (20, 30), statuses
        refused = next(r for r in answered if r.status_code == 429)
        assert "Retry-After" in refused.headers and "try again" in refused.json()["detail"]

        # the address's daily quota, the same way (its hourly one larger)
        site = await widget_site(
            client, b.url, name="quota-day", ip_questions_per_hour=100, ip_questions_per_day=9
        )
        tokens = [await visitor_token(client, r.url, site) for r in (a, b) * 25]
        answered = await at_once(
            *(
                widget_question(client, r.url, token, "198.51.100.30")
                for r, token in zip((a, b) * 25, tokens, strict=True)
            )
        )
        statuses = [r.status_code for r in answered]
        assert (statuses.count(200), statuses.count(429)) == (9, 41), statuses
        assert "today" in next(r for r in answered if r.status_code == 429).json()["detail"]

        site = await widget_site(client, b.url, name="quota-visitor", visitor_questions_per_day=7)
        token = await visitor_token(client, a.url, site)
        answered = await at_once(
            *(widget_question(client, r.url, token, f"203.0.113.{n}") for n, r in
              enumerate((a, b) * 25))
        )  # fmt: skip
        statuses = [r.status_code for r in answered]
        assert (statuses.count(200), statuses.count(429)) == (7, 43), statuses

        limit = 30_000  # a few questions' reserves (about 8,000 tokens each)
        site = await widget_site(client, a.url, name="quota-tokens", tokens_per_day=limit)
        tokens = [await visitor_token(client, r.url, site) for r in (a, b) * 25]
        before = support_tokens(replicas)
        answered = await at_once(
            *(
                widget_question(client, r.url, token, f"192.0.2.{n}")
                for n, (r, token) in enumerate(zip((a, b) * 25, tokens, strict=True))
            )
        )
        served = [r for r in answered if r.status_code == 200]
        assert 0 < len(served) < 50
        assert {r.status_code for r in answered} == {200, 429}
        [(counted,)] = replicas.query(
            """SELECT count FROM widget_counters c JOIN widget_sites s ON s.id = c.site_id
                WHERE s.name = 'quota-tokens' AND c.subject = 'tokens'"""
        )
        # settled to what the answers spent, by the usage ledger
        assert 0 < counted == support_tokens(replicas) - before <= limit

        # switched off through one process: the other refuses its visitors at once
        await client.patch(f"{a.url}/widget/sites/{site['id']}", json={"enabled": False})
        off = await widget_question(client, b.url, tokens[1], "192.0.2.200")()
        assert off.status_code == 403 and "switched off" in off.json()["detail"]
    finally:
        replicas.fakes.openai.delay = 0.0
    assert replicas.errors() == []


# ---------------------------------------------------------------- 8. handoff


async def test_a_handoff_made_through_one_process_is_respected_by_the_other(replicas, client):
    """A customer asks for a person through process A; their next message, delivered to
    process B, is never answered by the AI: B reads the mode from the database. The
    owner's message written through B reaches the customer."""
    chat, telegram, openai = 8810, replicas.fakes.telegram, replicas.fakes.openai
    a, b = replicas.both
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}

    def to_customer() -> list[str]:
        return [s["text"] for s in list(telegram.sent) if s["chat_id"] == chat]

    def completions() -> int:
        """The model calls that answer the customer's message (a background job of another
        test, a role learning from earlier turns, may call the model meanwhile)."""
        return sum(
            1
            for r in list(openai.requests)
            if r.path.endswith("/chat/completions")
            and f"Question: {QUESTION}" in json.dumps(r.body)
        )

    asking = {**telegram_update(9101, chat)}
    asking["message"] = {**asking["message"], "text": "I want to talk to a person"}
    response = await client.post(f"{a.url}/webhook/telegram", json=asking, headers=headers)
    assert response.status_code == 200
    await wait_for(lambda: to_customer(), 30)
    assert to_customer() == ["A person from our team will reply here."]
    before = completions()

    response = await client.post(
        f"{b.url}/webhook/telegram", json=telegram_update(9102, chat), headers=headers
    )
    assert response.status_code == 200
    answered = (
        "SELECT 1 FROM channel_updates WHERE delivery_id = '9102' AND answered_at IS NOT NULL"
    )
    with trio.fail_after(30):
        while not replicas.query(answered):
            await trio.sleep(0.05)
    assert completions() == before and len(to_customer()) == 1  # the AI stayed silent
    [(conversation, mode)] = replicas.query(
        """SELECT c.id, c.mode FROM conversations c JOIN conversation_turns t
                ON t.conversation_id = c.id
            WHERE t.question = %s AND t.author = 'customer'""",
        QUESTION,
    )
    assert mode == "human"

    written = await client.post(
        f"{b.url}/conversations/{conversation}/messages", json={"text": "Hello, it's Ann."}
    )
    assert written.status_code == 201 and written.json()["delivered"] is True
    assert to_customer()[-1] == "Hello, it's Ann."
    assert replicas.errors() == []


# ---------------------------------------------------------------- 9. API keys


async def make_key(client: httpx.AsyncClient, url: str, **fields: Any) -> dict[str, Any]:
    made = await client.post(f"{url}/keys", json=fields)
    assert made.status_code == 201, made.text
    return made.json()


async def test_a_key_revoked_or_expired_in_one_process_is_refused_by_both_at_once(replicas, client):
    """No SERVICE_API_KEY here: a request without a key is the owner's, and one with a key
    made with /keys is held to that key, whichever process it reaches."""
    a, b = replicas.both
    key = await make_key(client, a.url, name="revoked soon", scopes=["read"])
    headers = {"X-API-Key": key["key"]}
    for replica in replicas.both:
        assert (await client.get(f"{replica.url}/documents", headers=headers)).status_code == 200
    revoked = await client.delete(f"{b.url}/keys/{key['id']}")
    assert revoked.status_code == 204
    for replica in replicas.both:  # the very next request, in either process
        refused = await client.get(f"{replica.url}/documents", headers=headers)
        assert refused.status_code == 401
        assert refused.json()["detail"] == "this API key (revoked soon) was revoked"

    expiring = await make_key(client, b.url, name="expiring", scopes=["read"], expires_in_days=1)
    headers = {"X-API-Key": expiring["key"]}
    replicas.query(  # a day later: the moment it expires is two seconds from now
        "UPDATE api_keys SET expires_at = now() + interval '2 seconds' WHERE id = %s RETURNING id",
        expiring["id"],
    )
    for replica in replicas.both:
        assert (await client.get(f"{replica.url}/documents", headers=headers)).status_code == 200
    await trio.sleep(2.1)
    for replica in replicas.both:
        refused = await client.get(f"{replica.url}/documents", headers=headers)
        assert refused.status_code == 401
        assert "this API key (expiring) expired at" in refused.json()["detail"]
    assert replicas.errors() == []


async def test_a_keys_rate_holds_exactly_with_concurrent_clients_through_both(replicas, client):
    """A key of 10 requests a minute, asked 30 times at once, 15 through each process,
    every request made to wait at the same moment (the minute's counts locked until every
    pooled connection of both processes waits): exactly 10 get through, the other 20 are
    429 with Retry-After, the seconds to the next minute. Another key is not held by it."""
    key = await make_key(
        client, replicas.a.url, name="ten a minute", scopes=["chat"], requests_per_minute=10
    )
    other = await make_key(client, replicas.b.url, name="unlimited", scopes=["chat"])
    if time.time() % 60 > 45:  # the burst and the checks below fit in one minute
        await trio.sleep(60.5 - time.time() % 60)
    headers = {"X-API-Key": key["key"]}
    replies = await released_together(
        replicas,
        "api_key_minutes",
        *(
            partial(client.get, f"{r.url}/v1/models", headers=headers)
            for r in replicas.both
            for _ in range(15)
        ),
    )
    left = 60 - time.time() % 60
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [200] * 10 + [429] * 20
    remaining = sorted(int(r.headers["RateLimit-Remaining"]) for r in replies)
    assert remaining == [0] * 21 + list(range(1, 10))  # each admitted request's count
    for limited in (r for r in replies if r.status_code == 429):
        assert abs(int(limited.headers["Retry-After"]) - left) <= 2
        assert limited.headers["RateLimit-Reset"] == limited.headers["Retry-After"]
        assert limited.headers["RateLimit-Limit"] == "10"
        assert limited.json()["error"]["message"] == (
            "this API key's limit of 10 requests a minute is reached"
        )
    for replica in replicas.both:  # still over it in either process; the other key is not
        again = await client.get(f"{replica.url}/v1/models", headers=headers)
        assert again.status_code == 429
        free = await client.get(f"{replica.url}/v1/models", headers={"X-API-Key": other["key"]})
        assert free.status_code == 200
    metrics = (await client.get(f"{replicas.a.url}/metrics")).text
    assert 'ragchat_api_key_requests_total{key="ten a minute",result="limited"}' in metrics
    assert replicas.errors() == []


def key_tokens(replicas: Replicas, key_id: int) -> tuple[int, int]:
    """(tokens settled, rows still reserved) of an API key in the ledger."""
    [(used, held)] = replicas.query(
        """SELECT coalesce(sum(prompt_tokens + completion_tokens)
                           FILTER (WHERE state = 'settled'), 0),
                  count(*) FILTER (WHERE state = 'reserved')
             FROM usage_records WHERE api_key_id = %s""",
        key_id,
    )
    return int(used), int(held)


async def test_a_keys_daily_tokens_hold_across_both_and_are_its_own(replicas, client):
    """A chat key of 1,200 tokens a day, asked twenty times at once through both processes
    with every reservation made to wait at the same moment: the tokens it used never pass
    its limit, the others get the usage-limit answer without the provider being called,
    and another key's questions are not counted against it. /usage shows each key's."""
    openai = replicas.fakes.openai
    key = await make_key(
        client, replicas.a.url, name="website", scopes=["chat"], tokens_per_day=1200
    )
    other = await make_key(client, replicas.b.url, name="reports", scopes=["chat", "read"])
    asked = await client.post(
        f"{replicas.b.url}/chat",
        params={"question": QUESTION},
        headers={"X-API-Key": other["key"]},
    )
    assert asked.status_code == 200 and not asked.json()["limited"]
    calls_before = len(openai.requests_to("/v1/chat/completions"))
    headers = {"X-API-Key": key["key"]}
    replies = await released_together(
        replicas,
        "usage_records",
        *(
            partial(client.post, f"{r.url}/chat", params={"question": QUESTION}, headers=headers)
            for r in replicas.both
            for _ in range(10)
        ),
    )
    assert [r.status_code for r in replies] == [200] * 20
    bodies = [r.json() for r in replies]
    answered = [b for b in bodies if not b["limited"]]
    limited = [b for b in bodies if b["limited"]]
    assert answered and limited
    assert all(b["answer"] == LIMIT_REACHED for b in limited)
    used, held = key_tokens(replicas, key["id"])
    assert held == 0 and used == sum(tokens(b) for b in answered) <= 1200
    per_answer = max(tokens(b) for b in answered)
    assert len(answered) >= 1200 // per_answer - 1  # what fits, no more
    assert len(openai.requests_to("/v1/chat/completions")) - calls_before == len(answered)
    # at the edge: what is left is less than a question's least prompt, in either process
    for replica in replicas.both:
        after = await client.post(
            f"{replica.url}/chat", params={"question": QUESTION}, headers=headers
        )
        assert after.json()["answer"] == LIMIT_REACHED
    usage = (await client.get(f"{replicas.a.url}/usage")).json()
    by_key = {row["key"]: row for row in usage["this_month_by_key"]}
    assert by_key["website"]["total_tokens"] == used
    assert by_key["reports"]["total_tokens"] == tokens(asked.json())
    listed = (await client.get(f"{replicas.b.url}/keys/{key['id']}")).json()
    assert listed["usage"]["tokens_today"] == used
    assert replicas.errors() == []
