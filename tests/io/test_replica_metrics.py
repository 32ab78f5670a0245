"""The processes of one `ragchat serve` behind one port (issue 38): their metrics and their
providers' last calls are the whole service's, whichever process a scrape or GET /status
reaches.

The processes share a folder named by ``PROMETHEUS_MULTIPROC_DIR``, which the supervisor
gives each process it starts, and it calls ``ragio.metrics.process_ended`` for one that
has ended. Here two real `ragchat serve` processes on one database (``test_replicas``'s)
are given the same folder, and this test plays the supervisor.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from ragio import metrics
from ragio.db.embedded import EmbeddedPostgres
from tests.io import test_replicas
from tests.io.channels import QUESTION, wait_for
from tests.io.test_replicas import Fakes, Replica, Replicas, started_replicas

fakes = test_replicas.fakes  # its fixture: the fake providers, for this module's processes

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
HEALTH = (
    "ragchat_http_requests_total",
    frozenset({"method": "GET", "route": "/health", "status": "200"}.items()),
)
IN_FLIGHT = ("ragchat_http_requests_in_flight", frozenset())


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("multiproc")


@pytest.fixture(scope="module")
def workers(
    embedded_server: EmbeddedPostgres,
    fakes: Fakes,
    tmp_path_factory: pytest.TempPathFactory,
    shared: Path,
) -> Iterator[Replicas]:
    """Two `ragchat serve` processes on one database, sharing one metrics folder."""
    # APP_WORKERS=1: each `serve` one process, which a supervising `serve` would not give
    # this folder but one of its own
    with started_replicas(
        embedded_server, fakes, tmp_path_factory, prometheus_multiproc_dir=shared, app_workers=1
    ) as both:
        yield both


async def scrape(http: httpx.AsyncClient, replica: Replica) -> Samples:
    """A scrape of ``replica``, each family there once (none of one process only)."""
    response = await http.get(f"{replica.url}/metrics")
    assert response.status_code == 200, response.text
    families = list(text_string_to_metric_families(response.text))
    names = [family.name for family in families]
    assert len(names) == len(set(names)), "a family shown twice"
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in families
        for sample in family.samples
    }


async def test_each_process_shows_the_sum_and_the_others_last_calls(workers, shared, monkeypatch):
    async with httpx.AsyncClient(timeout=60) as client:
        await each_shows_the_sum_and_the_others_last_calls(workers, shared, monkeypatch, client)


async def each_shows_the_sum_and_the_others_last_calls(
    workers: Replicas, shared: Path, monkeypatch: pytest.MonkeyPatch, client: httpx.AsyncClient
) -> None:
    a, b = workers.both
    before = await scrape(client, a)
    for replica, times in ((a, 3), (b, 5)):
        for _ in range(times):
            assert (await client.get(f"{replica.url}/health")).status_code == 200
    for replica in (a, b):
        after = await scrape(client, replica)
        assert after[HEALTH] - before[HEALTH] == 8, replica.url
        # the database's counts once, from the process scraped; no one process's CPU
        assert ("ragchat_actions_pending_approval", frozenset()) in after
        assert not any(name.startswith("process_") for name, _ in after)

    # a provider call through one process shows in the other's /status
    started = datetime.now(UTC) - timedelta(seconds=1)
    asked = await client.post(f"{a.url}/chat", json={"question": QUESTION})
    assert asked.status_code == 200, asked.text
    status = await client.get(f"{b.url}/status")
    answering = status.json()["items"]["answering"]
    [call] = [c for c in answering["last_calls"] if c["provider"] == "openai"]
    assert call["outcome"] == "ok" and datetime.fromisoformat(call["at"]) >= started

    # a request in flight in a process that dies counts until the supervisor says it ended
    openai = workers.fakes.openai
    chats = len(openai.requests_to("/v1/chat/completions"))
    openai.chat_delay = 30  # read as the request comes: B's hangs
    async with trio.open_nursery() as nursery:

        async def hanging() -> None:
            with suppress(httpx.TransportError):  # the process is killed
                await client.post(f"{b.url}/chat", json={"question": QUESTION})

        nursery.start_soon(hanging)
        await wait_for(lambda: len(openai.requests_to("/v1/chat/completions")) > chats, 10)
        openai.chat_delay = 0
        assert (await scrape(client, a))[IN_FLIGHT] == 2  # the scrape and B's /chat
        b.process.send_signal(signal.SIGKILL)
        b.process.wait(10)
        assert (await scrape(client, a))[IN_FLIGHT] == 2  # B's is left in its file
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(shared))
        metrics.process_ended(b.process.pid)
        metrics.process_ended(b.process.pid + 100_000)  # a process that wrote nothing
        after = await scrape(client, a)
        assert after[IN_FLIGHT] == 1  # the scrape alone
        assert after[HEALTH] - before[HEALTH] == 8  # B's counts stay in the sums
        assert not (shared / f"last_calls_{b.process.pid}.json").exists()
