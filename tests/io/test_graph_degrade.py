"""The service on a Neo4j graph (the fake Bolt server, through the official driver), and
every way the graph can fail: unreachable, a wrong password, failing or hanging
mid-query, stopped mid-run. The answer is always given from hybrid search, an upload is
always stored, ``/health`` says the graph is degraded and why, and the log says it once."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import trio

from tests.io.fakes.bolt_server import FakeNeo4j
from tests.io.test_graph import OWNERS, SUPPLIERS, add

PASSWORD = "n30-graph-secret"


@pytest.fixture
def neo4j() -> Iterator[FakeNeo4j]:
    server = FakeNeo4j(password=PASSWORD).start()
    yield server
    server.stop()


def on_neo4j(uri: str, password: str = PASSWORD) -> dict[str, Any]:
    return {
        "graph_uri": uri,
        "graph_user": "neo4j",
        "graph_password": password,
        "graph_timeout_seconds": "1",
    }


@pytest.fixture
def settings_overrides(request: pytest.FixtureRequest, neo4j: FakeNeo4j) -> dict[str, Any]:
    """On the fake Neo4j; ``param``: "wrong password" or "closed port" instead."""
    if getattr(request, "param", None) == "wrong password":
        return on_neo4j(neo4j.uri(), password="not-the-password")
    if getattr(request, "param", None) == "closed port":
        return on_neo4j("bolt://127.0.0.1:9")  # discard: nothing listens
    return on_neo4j(neo4j.uri("neo4j"))  # the routing scheme


async def ask(api: httpx.AsyncClient, question: str = "Who makes the Widget X?") -> str:
    response = await api.post("/chat", json={"question": question})
    assert response.status_code == 200, response.text
    return str(response.json()["answer"])


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "degraded" in r.getMessage()]


async def test_the_graph_lives_in_neo4j(api, neo4j):
    suppliers = await add(api, "suppliers.md", SUPPLIERS)
    await add(api, "owners.md", OWNERS)
    assert "foo ltd" in neo4j.graph.entities  # written through the driver, batched
    health = (await api.get("/health")).json()
    assert health["graph"] == {"status": "ok", "store": "neo4j", "reason": None}
    [foo] = (await api.get("/graph/entities", params={"q": "foo"})).json()["entities"]
    assert foo["documents"] == 2
    detail = (await api.get(f"/graph/entities/{foo['id']}")).json()
    assert {m["document_name"] for m in detail["mentions"]} == {"suppliers.md", "owners.md"}
    assert "Foo Ltd" in await ask(api)

    await api.delete(f"/documents/{suppliers['id']}")
    assert "widget x" not in neo4j.graph.entities  # forgotten in Neo4j too


async def test_stopped_mid_run_then_back(api, service, neo4j, caplog):
    caplog.set_level(logging.INFO, logger="ragio.graph.service")
    await add(api, "suppliers.md", SUPPLIERS)
    neo4j.stop()

    for _ in range(3):
        assert "Foo Ltd" in await ask(api)
    stored = await add(api, "owners.md", OWNERS)  # stored though the graph cannot learn it
    assert stored["chunk_count"] == 1
    health = (await api.get("/health")).json()
    assert health["status"] == "degraded"
    assert health["graph"]["status"] == "degraded"
    assert "cannot reach the graph" in health["graph"]["reason"]
    assert (await api.get("/graph/entities")).status_code == 503
    assert len(warnings_of(caplog)) == 1, warnings_of(caplog)  # once, not per request

    neo4j.start()
    service.graph.retry_seconds = 0  # (30 s in service)
    with trio.fail_after(10):  # what it missed is caught up by itself
        while "bar inc" not in neo4j.graph.entities:
            await trio.sleep(0.1)
    assert (await api.get("/health")).json()["graph"]["status"] == "ok"
    assert any("recovered" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("settings_overrides", "reason"),
    [
        ("wrong password", "refused GRAPH_USER/GRAPH_PASSWORD"),
        ("closed port", "cannot reach the graph at bolt://127.0.0.1:9"),
    ],
    indirect=["settings_overrides"],
)
async def test_a_graph_that_cannot_be_used_never_fails_an_answer(api, caplog, reason):
    caplog.set_level(logging.INFO)
    await add(api, "suppliers.md", SUPPLIERS)
    for _ in range(3):
        assert "Foo Ltd" in await ask(api)
    health = (await api.get("/health")).json()
    assert health["graph"]["status"] == "degraded"
    assert reason in health["graph"]["reason"]
    assert len(warnings_of(caplog)) == 1, warnings_of(caplog)
    assert "not-the-password" not in caplog.text and PASSWORD not in caplog.text
    assert "not-the-password" not in str(health)


async def test_failing_or_hanging_mid_query(api, service, neo4j):
    await add(api, "suppliers.md", SUPPLIERS)
    neo4j.fail_next("Neo.DatabaseError.General.UnknownError", "boom", times=10)
    assert "Foo Ltd" in await ask(api)
    assert (await api.get("/health")).json()["graph"]["status"] == "degraded"

    neo4j.clear_faults()
    service.graph.retry_seconds = 0
    assert (await api.get("/graph/entities")).status_code == 200  # recovered
    neo4j.hang_next(30, times=10)
    started = time.monotonic()
    assert "Foo Ltd" in await ask(api)
    assert time.monotonic() - started < 10  # GRAPH_TIMEOUT_SECONDS (1), not the hang
    health = (await api.get("/health")).json()["graph"]
    assert health["status"] == "degraded" and "1 s" in health["reason"]
    neo4j.clear_faults()
