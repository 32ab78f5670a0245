"""GET /health while the database does not answer: the session's embedded PostgreSQL is
frozen for real (SIGSTOP on the postmaster and every child of it) and always resumed
before the test ends, since every other test shares that server."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psutil
import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict

from ragcore import __version__
from ragio.service import Service

HEALTH_SECONDS = 3  # the docs promise "degraded" within this


def postmaster(postgres_url: str) -> psutil.Process:
    """The process listening where ``postgres_url`` connects (the embedded server listens
    on a Unix socket: its folder is the URL's host)."""
    params = conninfo_to_dict(postgres_url)
    socket = f"{params['host']}/.s.PGSQL.{params.get('port') or 5432}"
    listening = {c.pid for c in psutil.net_connections(kind="unix") if c.laddr == socket and c.pid}
    # the postmaster: its backends' command lines are rewritten ("postgres: ragchat …");
    # by parentage alone a second root was once found in a fresh-clone run
    [pid] = [pid for pid in listening if "-D" in _command_line(pid)]
    return psutil.Process(pid)


def _command_line(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:  # a backend that ended meanwhile
        return []


@contextlib.contextmanager
def frozen(postgres_url: str) -> Iterator[None]:
    """The whole server stopped (it forks nothing once its postmaster is stopped), then
    resumed whatever happens."""
    server = postmaster(postgres_url)
    stopped: list[psutil.Process] = []
    try:
        server.suspend()
        stopped.append(server)
        for child in server.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                child.suspend()
                stopped.append(child)
        yield
    finally:
        for process in [*server.children(recursive=True), server]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.resume()


async def health(api: httpx.AsyncClient) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    response = await api.get("/health")
    assert response.status_code == 200
    return response.json(), time.monotonic() - started


def assert_degraded(body: dict[str, Any], seconds: float) -> None:
    assert body["status"] == "degraded"
    assert body["database"]["reachable"] is False
    assert seconds < HEALTH_SECONDS, f"/health took {seconds:.2f} s"


async def fill_the_pool(service: Service) -> None:
    """Open every connection the pool may hold (8), so requests can all be stuck in it."""

    def hold(conn: psycopg.Connection) -> None:
        conn.execute("SELECT pg_sleep(0.5)")

    async with trio.open_nursery() as nursery:
        for _ in range(service.database.limiter.total_tokens):
            nursery.start_soon(service.database.run, hold)


async def test_health_is_ok_when_the_database_answers(api):
    body, seconds = await health(api)
    assert body["status"] == "ok" and body["database"]["reachable"] is True


async def test_a_frozen_database_with_requests_stuck_on_it_is_degraded_within_3_s(
    api, service, postgres_url, nursery
):
    await fill_the_pool(service)
    answered: list[int] = []

    async def stuck_request() -> None:
        answered.append((await api.get("/documents")).status_code)

    with frozen(postgres_url):
        # requests that hold every connection of the pool, in a database that answers nothing
        for _ in range(service.database.limiter.total_tokens):
            nursery.start_soon(stuck_request)
        await wait_until(lambda: service.database.pool.get_stats()["pool_available"] == 0)
        for _ in range(3):
            assert_degraded(*await health(api))
        assert answered == []  # they were stuck all along
    await wait_until(lambda: len(answered) == service.database.limiter.total_tokens)
    assert answered == [200] * service.database.limiter.total_tokens
    body, _ = await health(api)
    assert body["status"] == "ok" and body["database"]["reachable"] is True


async def test_health_checks_of_a_frozen_database_do_not_pile_up_stuck_threads(api, postgres_url):
    await health(api)  # the thread cache warm, a connection idle in the pool
    with frozen(postgres_url):
        assert_degraded(*await health(api))  # its ping hangs in the frozen server
        threads = threading.active_count()
        for _ in range(3):
            assert_degraded(*await health(api))
        results: list[tuple[dict[str, Any], float]] = []

        async def check() -> None:
            results.append(await health(api))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(check)
        for result in results:
            assert_degraded(*result)
        assert threading.active_count() <= threads + 1
    await wait_until_healthy(api)


async def wait_until(condition: Any, seconds: float = 20) -> None:
    with trio.fail_after(seconds):
        while not condition():
            await trio.sleep(0.05)


async def wait_until_healthy(api: httpx.AsyncClient, seconds: float = 20) -> None:
    with trio.fail_after(seconds):
        while (await health(api))[0]["status"] != "ok":
            await trio.sleep(0.1)


async def test_probes_say_alive_and_ready_when_the_database_answers(api):
    live, ready = await api.get("/health/live"), await api.get("/health/ready")
    assert (live.status_code, live.json()) == (200, {"status": "alive"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})


async def test_a_frozen_database_makes_the_process_unready_but_still_alive(api, postgres_url):
    await health(api)
    with frozen(postgres_url):
        started = time.monotonic()
        ready = await api.get("/health/ready")
        assert time.monotonic() - started < HEALTH_SECONDS
        assert ready.status_code == 503
        assert ready.headers["content-type"] == "application/problem+json"
        assert ready.json()["detail"] == "the database does not answer"
        assert (await api.get("/health/live")).status_code == 200
    await wait_until_healthy(api)
    assert (await api.get("/health/ready")).status_code == 200


async def test_a_stopping_service_is_unready_at_once(api, service):
    service.stopping.set()
    ready = await api.get("/health/ready")
    assert ready.status_code == 503
    assert ready.json()["detail"] == "the service is shutting down"
    assert (await api.get("/health/live")).status_code == 200


KEY = "health-key-6b1f0e3d2c"


@pytest.mark.parametrize("settings_overrides", [{"service_api_key": KEY}])
async def test_with_an_api_key_a_stranger_learns_only_the_status(api, settings_overrides):
    """No version, provider or model name for a caller without the key; the full answer
    with it; the probes open to all."""
    for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
        response = await api.get("/health", headers=headers)
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}, headers
    for headers in ({"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"}):
        full = (await api.get("/health", headers=headers)).json()
        assert full["status"] == "ok" and full["version"] == __version__
        assert full["providers"]["llm"]["name"] == "extractive"
        assert full["database"] == {"reachable": True, "embedded": False}
    assert (await api.get("/health/live")).json() == {"status": "alive"}
    assert (await api.get("/health/ready")).json() == {"status": "ready"}


async def test_without_an_api_key_health_tells_everything(api):
    """SERVICE_API_KEY unset: the service listens on loopback only, /health as ever."""
    full = (await api.get("/health")).json()
    assert full["version"] == __version__ and full["mode"] == "offline"
