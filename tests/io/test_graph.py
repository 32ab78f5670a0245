"""The knowledge graph in the service's PostgreSQL, for real: the store's contract, what
the owner sees at /graph/entities, documents replaced and deleted, the graph's list in
answers, and the graph failing without failing anything else."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import psycopg
import pytest
import trio

from ragcore.knowledge.graph import (
    ChunkGraph,
    DocumentGraph,
    Entity,
    Relation,
    entity_id,
    rank_graph_chunks,
)
from ragio.graph.postgres import PostgresGraphStore
from ragio.service import Service

GRAPH_ON = {"graph_enabled": "true"}


def entity(name: str, kind: str = "name") -> Entity:
    return Entity(name.casefold(), name, kind)


async def add(api: httpx.AsyncClient, name: str, text: str, **extra: Any) -> dict[str, Any]:
    response = await api.post("/documents", json={"name": name, "text": text, **extra})
    assert response.status_code in (200, 201), response.text
    return response.json()


# ---------------------------------------------------------------- the store's contract


async def chunk_ids(service: Service, count: int) -> list[int]:
    """``count`` real chunks (mentions reference them), one per document."""
    from ragio.knowledge import store

    def insert(conn: psycopg.Connection) -> list[int]:
        space = service.embedder.space
        ids = []
        for n in range(count):
            [row] = conn.execute(
                """INSERT INTO documents (name, content_hash, text, content_type, size_bytes)
                   VALUES (%s, %s, %s, 'text/plain', 6) RETURNING id""",
                (f"doc{n}", f"hash{n}", f"text {n}"),
            ).fetchall()
            [chunk] = conn.execute(
                """INSERT INTO chunks (document_id, position, text, embedding)
                   VALUES (%s, 0, %s, %s::vector) RETURNING id""",
                (row[0], f"text {n}", store.vector_literal([0.1] * space.dimensions)),
            ).fetchall()
            ids.append(chunk[0])
        return ids

    return await service.database.run(insert)


def chain(chunks: list[int]) -> list[DocumentGraph]:
    """Chunk 1 names Acme Corp and Widget X; 2: Widget X and Foo Ltd; 3: Foo Ltd and Bar
    Inc; 4: Bar Inc alone. Document n holds chunk n."""
    acme, widget, foo, bar = (entity(n) for n in ("Acme Corp", "Widget X", "Foo Ltd", "Bar Inc"))
    pairs = [(acme, widget), (widget, foo), (foo, bar)]
    graphs = [
        DocumentGraph(
            document_id=n + 1,
            chunks=(ChunkGraph(chunks[n], (a, b), (Relation(a.key, b.key),)),),
        )
        for n, (a, b) in enumerate(pairs)
    ]
    graphs.append(DocumentGraph(4, (ChunkGraph(chunks[3], (bar,)),)))
    return graphs


async def test_the_store_reaches_one_and_two_hops_by_the_contract(service):
    ids = await chunk_ids(service, 4)
    graph = PostgresGraphStore(service.database.pool)
    graph.prepare()
    graph.record(chain(ids))

    seeds = graph.reach(["widget x", "no such thing"], 0, 20, 200)
    assert [(e.key, e.hop, e.mentions, e.chunk_ids) for e in seeds.entities] == [
        ("widget x", 0, 2, (ids[0], ids[1]))
    ]
    one = graph.reach(["widget x"], 1, 20, 200)
    assert [(e.key, e.hop, e.link) for e in one.entities] == [
        ("widget x", 0, 0),
        ("acme corp", 1, 1),
        ("foo ltd", 1, 1),
    ]
    two = graph.reach(["widget x"], 2, 20, 200)
    assert [(e.key, e.hop) for e in two.entities][-1] == ("bar inc", 2)
    # the seed's chunks first, then the neighbours'; Bar Inc's own chunk is reached at two hops
    assert rank_graph_chunks(one, 10)[:2] == [ids[0], ids[1]]
    assert ids[3] not in rank_graph_chunks(one, 10)
    assert ids[3] in rank_graph_chunks(two, 10)

    # at most one neighbour each, strongest first, ties by key: acme corp before foo ltd
    narrow = graph.reach(["widget x"], 1, 1, 200)
    assert [e.key for e in narrow.entities] == ["widget x", "acme corp"]
    # an entity in more chunks than max_mentions is reached, its chunks not listed, its
    # relations not followed (a hub's neighbours are everything)
    common = graph.reach(["widget x"], 1, 20, 1)
    assert [(e.key, e.mentions, e.chunk_ids) for e in common.entities] == [("widget x", 2, ())]
    beyond = graph.reach(["acme corp"], 2, 20, 1)
    assert [(e.key, e.hop) for e in beyond.entities] == [("acme corp", 0), ("widget x", 1)]

    counts = graph.counts()
    assert (counts.entities, counts.mentions, counts.relations) == (4, 7, 3)


async def test_the_store_lists_finds_and_forgets(service):
    ids = await chunk_ids(service, 4)
    graph = PostgresGraphStore(service.database.pool)
    graph.record(chain(ids))

    found, total = graph.find_entities("", 10, 0)
    assert total == 4
    # most mentioned first, then by key
    assert [e.key for e in found] == ["bar inc", "foo ltd", "widget x", "acme corp"]
    assert graph.find_entities("LTD", 10, 0)[1] == 1
    assert graph.find_entities("%", 10, 0) == ([], 0)  # taken literally
    assert [e.key for e in graph.find_entities("", 2, 2)[0]] == ["widget x", "acme corp"]

    detail = graph.entity(entity_id("foo ltd"), 50)
    assert detail is not None
    assert detail.entity.name == "Foo Ltd" and detail.entity.documents == 2
    assert [m.chunk_id for m in detail.mentions] == [ids[1], ids[2]]
    assert [(n.entity.key, n.weight, n.kinds) for n in detail.neighbours] == [
        ("bar inc", 1, ("co_occurs",)),
        ("widget x", 1, ("co_occurs",)),
    ]
    assert graph.entity("0" * 16, 50) is None

    # recording a document again replaces what it gave: chunk 1 now names Acme Corp alone
    graph.record([DocumentGraph(1, (ChunkGraph(ids[0], (entity("Acme Corp"),)),))])
    assert [e.key for e in graph.reach(["acme corp"], 1, 20, 200).entities] == ["acme corp"]
    # forgetting documents 1 and 2 leaves Widget X with no mention: it goes
    graph.forget([1, 2])
    assert graph.entity(entity_id("widget x"), 50) is None
    assert graph.entity(entity_id("acme corp"), 50) is None
    assert graph.counts().entities == 2
    graph.clear()
    assert graph.counts().entities == 0


# ---------------------------------------------------------------- through the service

SUPPLIERS = """# Suppliers

The Widget X is manufactured by Foo Ltd at its plant in Leeds.
Foo Ltd also makes the Gadget Pro for our catalogue.
"""

OWNERS = """# Ownership

Foo Ltd was acquired by Bar Inc in 2021, and its head office moved to Manchester.
"""


@pytest.mark.parametrize("settings_overrides", [GRAPH_ON])
async def test_the_owner_sees_what_was_extracted(api):
    suppliers = await add(api, "suppliers.md", SUPPLIERS)
    await add(api, "owners.md", OWNERS)

    listed = (await api.get("/graph/entities", params={"q": "foo"})).json()
    assert listed["total"] == 1
    [foo] = listed["entities"]
    assert (foo["name"], foo["mentions"], foo["documents"]) == ("Foo Ltd", 2, 2)

    detail = (await api.get(f"/graph/entities/{foo['id']}")).json()
    names = {m["document_name"] for m in detail["mentions"]}
    assert names == {"suppliers.md", "owners.md"}
    assert any("Leeds" in m["excerpt"] for m in detail["mentions"])
    neighbours = {n["entity"]["name"] for n in detail["neighbours"]}
    assert {"Widget X", "Bar Inc"} <= neighbours

    page = (await api.get("/graph/entities", params={"limit": 2})).json()
    assert len(page["entities"]) == 2 and page["next"].startswith("/graph/entities?")
    following = (await api.get(page["next"])).json()
    assert {e["id"] for e in following["entities"]}.isdisjoint({e["id"] for e in page["entities"]})

    unknown = await api.get(f"/graph/entities/{'0' * 16}")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    malformed = await api.get("/graph/entities/not-an-id")
    assert malformed.status_code == 404

    # deleting the document takes what only it named with it
    deleted = await api.delete(f"/documents/{suppliers['id']}")
    assert deleted.status_code == 204
    left = (await api.get("/graph/entities")).json()
    assert "Widget X" not in {e["name"] for e in left["entities"]}
    foo_now = (await api.get(f"/graph/entities/{foo['id']}")).json()
    assert [m["document_name"] for m in foo_now["mentions"]] == ["owners.md"]

    health = (await api.get("/health")).json()
    assert health["graph"] == {"status": "ok", "store": "postgres", "reason": None}


@pytest.mark.parametrize("settings_overrides", [GRAPH_ON])
async def test_a_replaced_document_leaves_only_its_new_entities(api):
    await add(api, "suppliers.md", SUPPLIERS)
    new_version = "# Suppliers\n\nThe Widget X is made by Qux GmbH.\n"
    replaced = await add(api, "suppliers.md", new_version, replace=True)
    assert replaced["replaced"], replaced
    names = {e["name"] for e in (await api.get("/graph/entities")).json()["entities"]}
    assert "Qux GmbH" in names and "Foo Ltd" not in names and "Gadget Pro" not in names


async def test_the_graph_is_off_unless_turned_on(api):
    response = await api.get("/graph/entities")
    assert response.status_code == 409
    assert "GRAPH_ENABLED" in response.json()["detail"]
    assert (await api.get("/health")).json()["graph"]["status"] == "off"


# ---------------------------------------------------------------- failing without failing


@pytest.mark.parametrize("settings_overrides", [GRAPH_ON])
async def test_a_failing_graph_fails_no_answer_and_no_upload(api, service, caplog):
    caplog.set_level(logging.INFO, logger="ragio.graph.service")
    await add(api, "suppliers.md", SUPPLIERS)

    def break_graph(conn: psycopg.Connection) -> None:
        conn.execute("ALTER TABLE graph_entities RENAME TO graph_entities_away")

    def mend_graph(conn: psycopg.Connection) -> None:
        conn.execute("ALTER TABLE graph_entities_away RENAME TO graph_entities")

    await service.database.run(break_graph)
    for question in ("Who makes the Widget X?", "Where is the Widget X made?"):
        answer = await api.post("/chat", json={"question": question})
        assert answer.status_code == 200, answer.text
        assert "Foo Ltd" in answer.json()["answer"]
    stored = await add(api, "owners.md", OWNERS)  # an upload is not failed by the graph
    assert stored["chunk_count"] == 1
    health = (await api.get("/health")).json()
    assert health["status"] == "degraded"
    assert health["graph"]["status"] == "degraded"
    assert "graph_entities" in health["graph"]["reason"]
    listing = await api.get("/graph/entities")
    assert listing.status_code == 503
    # said once, not per request
    warnings = [r for r in caplog.records if "degraded" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]

    await service.database.run(mend_graph)
    service.graph.retry_seconds = 0  # the next call tries the store again
    assert (await api.get("/graph/entities")).status_code == 200
    assert (await api.get("/health")).json()["graph"]["status"] == "ok"
    assert any("recovered" in r.getMessage() for r in caplog.records)
    # what was stored while it was down is caught up by itself
    with trio.fail_after(10):
        while "Bar Inc" not in {
            e["name"] for e in (await api.get("/graph/entities")).json()["entities"]
        }:
            await trio.sleep(0.1)
