"""The Neo4j graph store through the official driver, against a fake server speaking real
Bolt (``tests/io/fakes/bolt_server.py``: the Cypher itself is run by Python twins there, so
these tests check the store's contract, batching, transactions, routing and degrading,
not the queries' Cypher)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from ragcore.knowledge.graph import (
    ChunkGraph,
    DocumentGraph,
    Entity,
    GraphCounts,
    Mention,
    ReachedEntity,
    Relation,
    entity_id,
)
from ragio.graph.neo4j import Neo4jGraphStore
from ragio.graph.store import GraphUnavailable
from tests.io.fakes.bolt_server import FakeNeo4j, Structure, pack, unpack

PASSWORD = "s3cret-graph-pw"
TIMEOUT = 0.5

ACME = Entity("acme corp", "Acme Corp", "name")
WIDGET = Entity("widget x", "Widget X", "code")
FOO = Entity("foo ltd", "Foo Ltd", "name")
BAR = Entity("bar inc", "Bar Inc", "name")


def chunk(chunk_id: int, *entities: Entity) -> ChunkGraph:
    """A chunk naming these entities, each pair co-occurring (as the offline rules record)."""
    pairs = tuple(Relation(a.key, b.key) for i, a in enumerate(entities) for b in entities[i + 1 :])
    return ChunkGraph(chunk_id, entities, pairs)


# chunk 1 names Acme Corp and Widget X, chunk 2 Widget X and Foo Ltd (document 1);
# chunk 3 Foo Ltd and Bar Inc (document 2)
DOC1 = DocumentGraph(1, (chunk(1, ACME, WIDGET), chunk(2, WIDGET, FOO)))
DOC2 = DocumentGraph(2, (chunk(3, FOO, BAR),))


@pytest.fixture
def fake() -> Iterator[FakeNeo4j]:
    server = FakeNeo4j(password=PASSWORD).start()
    yield server
    server.stop()


def open_store(uri: str, password: str = PASSWORD) -> Neo4jGraphStore:
    return Neo4jGraphStore(uri, "neo4j", password, timeout_seconds=TIMEOUT)


@pytest.fixture
def store(fake: FakeNeo4j) -> Iterator[Neo4jGraphStore]:
    opened = open_store(fake.uri())
    yield opened
    opened.close()


def unavailable(call, password: str = PASSWORD) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(GraphUnavailable) as raised:
        call()
    reason = str(raised.value)
    assert password not in reason
    return reason


def test_prepare_creates_the_constraints_and_indexes_idempotently(fake, store):
    store.prepare()
    store.prepare()
    assert fake.graph.schema == {
        "ragchat_entity_key",
        "ragchat_chunk_id",
        "ragchat_entity_id",
        "ragchat_chunk_document",
        "ragchat_related_document",
    }
    ddl = [run.query for run in fake.runs if run.tag and run.tag.startswith("constraint_")]
    assert all("IF NOT EXISTS" in query for query in ddl) and len(ddl) == 4
    # Bolt 5.4 as the driver speaks it: credentials in LOGON, telemetry when hinted,
    # every transaction carrying the server-side timeout
    assert {"HELLO", "LOGON", "TELEMETRY", "BEGIN", "RUN", "PULL", "COMMIT"} <= set(fake.messages)
    assert {begin.get("tx_timeout") for begin in fake.begins} == {int(TIMEOUT * 1000)}


def test_reach_one_and_two_hops(store):
    store.record([DOC1, DOC2])
    one = store.reach(["widget x"], hops=1, max_neighbours=20, max_mentions=200)
    assert one.entities == (
        ReachedEntity("widget x", hop=0, mentions=2, link=0, chunk_ids=(1, 2)),
        ReachedEntity("acme corp", hop=1, mentions=1, link=1, chunk_ids=(1,)),
        ReachedEntity("foo ltd", hop=1, mentions=2, link=1, chunk_ids=(2, 3)),
    )
    two = store.reach(["widget x", "nobody"], hops=2, max_neighbours=20, max_mentions=200)
    assert [(e.key, e.hop, e.link) for e in two.entities] == [
        ("widget x", 0, 0),
        ("acme corp", 1, 1),
        ("foo ltd", 1, 1),
        ("bar inc", 2, 1),
    ]
    assert store.reach(["nobody"], 2, 20, 200).entities == ()
    assert store.reach([], 2, 20, 200).entities == ()


def test_reach_takes_the_strongest_neighbours_ties_by_key_and_cuts_common_entities(store):
    store.record([DOC1, DOC2])
    # a tie (weight 1 each): by key, acme corp before foo ltd; acme's only neighbour is
    # widget x, already reached, so the second hop adds nothing
    tied = store.reach(["widget x"], hops=2, max_neighbours=1, max_mentions=200)
    assert [(e.key, e.hop) for e in tied.entities] == [("widget x", 0), ("acme corp", 1)]
    # a third document states widget x with foo ltd again: that relation weighs 2
    store.record([DocumentGraph(3, (chunk(4, WIDGET, FOO),))])
    strongest = store.reach(["widget x"], hops=1, max_neighbours=1, max_mentions=200)
    assert [(e.key, e.link) for e in strongest.entities] == [("widget x", 0), ("foo ltd", 2)]
    # more mentions than max_mentions: counted, not listed, and not followed (a hub)
    cut = store.reach(["widget x"], hops=1, max_neighbours=20, max_mentions=1)
    assert cut.entities == (ReachedEntity("widget x", 0, mentions=3, chunk_ids=()),)
    # a neighbour within the bound is followed; one beyond it is reached, not followed
    beyond = store.reach(["acme corp"], hops=2, max_neighbours=20, max_mentions=2)
    assert [(e.key, e.hop, e.chunk_ids) for e in beyond.entities] == [
        ("acme corp", 0, (1,)),
        ("widget x", 1, ()),
    ]


def test_forget_removes_a_documents_contribution_and_orphaned_entities(store):
    store.record([DOC1, DOC2])
    assert store.counts() == GraphCounts(entities=4, mentions=6, relations=3)
    store.forget([2, 99])
    assert store.counts() == GraphCounts(entities=3, mentions=4, relations=2)
    reached = store.reach(["foo ltd", "bar inc"], 1, 20, 200)
    assert [(e.key, e.chunk_ids) for e in reached.entities] == [
        ("foo ltd", (2,)),
        ("widget x", (1, 2)),
    ]
    assert store.entity(entity_id("bar inc"), 10) is None
    store.forget([])


def test_recording_a_document_again_replaces_its_contribution(store):
    store.record([DOC1, DOC2])
    gizmo = Entity("gizmo", "Gizmo", "name")
    store.record([DocumentGraph(1, (chunk(1, ACME, gizmo),))])
    assert store.find_entities("widget", 10, 0) == ([], 0)  # no chunk names it any more
    reached = store.reach(["acme corp"], 2, 20, 200)
    assert [(e.key, e.hop, e.chunk_ids) for e in reached.entities] == [
        ("acme corp", 0, (1,)),
        ("gizmo", 1, (1,)),
    ]
    assert store.counts() == GraphCounts(entities=4, mentions=4, relations=2)


def test_find_entities_case_insensitive_literal_ranked_and_paged(fake, store):
    store.record([DOC1, DOC2])
    found, total = store.find_entities("WIDGET", 10, 0)
    assert total == 1 and [(e.key, e.mentions, e.documents) for e in found] == [("widget x", 2, 1)]
    assert found[0].id == entity_id("widget x") and found[0].name == "Widget X"
    everything, total = store.find_entities("", 10, 0)
    # most mentioned first, then by key
    assert total == 4
    assert [e.key for e in everything] == ["foo ltd", "widget x", "acme corp", "bar inc"]
    assert [e.documents for e in everything] == [2, 1, 1, 1]
    page, total = store.find_entities("", 2, 1)
    assert total == 4 and [e.key for e in page] == ["widget x", "acme corp"]
    # taken literally: bound as a parameter, never part of the query's text
    hostile = "x' OR 1=1 //"
    assert store.find_entities(hostile, 10, 0) == ([], 0)
    assert store.find_entities(".*", 10, 0) == ([], 0)
    sent = [run for run in fake.runs if run.tag == "count_entities"]
    assert sent[-2].params == {"needle": hostile.lower()}
    assert hostile not in sent[-2].query


def test_entity_detail(store):
    store.record([DOC1, DOC2, DocumentGraph(3, (chunk(4, WIDGET, FOO),))])
    detail = store.entity(entity_id("widget x"), mention_limit=2)
    assert detail is not None
    assert (detail.entity.key, detail.entity.mentions, detail.entity.documents) == (
        "widget x",
        3,
        2,
    )
    assert detail.mentions == (Mention(1, 1), Mention(2, 1))
    assert [(n.entity.key, n.weight, n.kinds) for n in detail.neighbours] == [
        ("foo ltd", 2, ("co_occurs",)),
        ("acme corp", 1, ("co_occurs",)),
    ]
    assert store.entity("0" * 16, 5) is None


def test_clear(store):
    store.record([DOC1, DOC2])
    store.clear()
    assert store.counts() == GraphCounts(0, 0, 0)
    assert store.reach(["widget x"], 2, 20, 200).entities == ()


def test_writes_are_batched_in_one_transaction(fake, store):
    def document(document_id: int) -> DocumentGraph:
        entities = [Entity(f"e{document_id}-{i}", f"E{i}", "name") for i in range(50)]
        chunks = tuple(
            ChunkGraph(
                document_id * 100 + i,
                tuple(entities[i * 5 : i * 5 + 5]),
                tuple(
                    Relation(a.key, b.key)
                    for a, b in zip(
                        entities[i * 5 : i * 5 + 4], entities[i * 5 + 1 : i * 5 + 5], strict=True
                    )
                ),
            )
            for i in range(10)
        )
        return DocumentGraph(document_id, chunks)

    fake.clear_records()
    store.record([document(1), document(2)])
    assert fake.messages.count("BEGIN") == 1 and fake.messages.count("COMMIT") == 1
    assert fake.tags() == [
        "forget_relations",
        "forget_chunks",
        "record_entities",
        "record_chunks",
        "record_mentions",
        "record_relations",
    ]
    rows = {run.tag: len(run.params.get("rows", [])) for run in fake.runs}
    assert rows["record_entities"] == 100 and rows["record_relations"] == 80
    assert store.counts() == GraphCounts(entities=100, mentions=100, relations=80)


def test_large_messages_and_results_cross_chunks_and_pulls(fake):
    """A write larger than a Bolt chunk (64 KiB) and a result larger than the driver's
    fetch size (1,000 records: PULL answers has_more, the driver pulls again). The store
    has more time than the others' 0.5 s: on a loaded machine, moving these megabytes
    through the fake took longer, and what is tested here is the framing, not a bound."""
    store = Neo4jGraphStore(fake.uri(), "neo4j", PASSWORD, timeout_seconds=10)
    entities = [Entity(f"entity {i:04d}", "Long name " * 20 + str(i), "term") for i in range(1500)]
    chunks = tuple(ChunkGraph(i, (entities[i],)) for i in range(1500))
    try:
        store.record([DocumentGraph(7, chunks)])
        fake.clear_records()
        reached = store.reach([e.key for e in entities], 0, 20, 200)
    finally:
        store.close()
    assert len(reached.entities) == 1500 and reached.entities[1499].chunk_ids == (1499,)
    assert fake.messages.count("PULL") >= 2


def test_packstream_round_trips_every_kind_of_value():
    values = [
        None, True, False, 0, -16, -17, 127, 128, -128, -129, 32767, -32768, 32768,
        2**31 - 1, -(2**31), 2**31, 2**63 - 1, -(2**63), 1.5, -0.0, "", "é" * 20,
        "x" * 300, "y" * 70_000, b"\x00\xff", [1, [2, [3]]], list(range(20)),
        list(range(300)), {"a": 1, "b": {"c": [None]}}, {str(i): i for i in range(20)},
        Structure(0x4E, [1, ["Entity"], {"key": "k"}]),
    ]  # fmt: skip
    for value in values:
        assert unpack(pack(value)) == value
    assert pack(-16) == b"\xf0" and pack(128) == b"\xc9\x00\x80" and pack(-17) == b"\xc8\xef"


def test_routing_with_a_neo4j_uri(fake):
    routed = open_store(fake.uri("neo4j"))
    try:
        routed.prepare()
        routed.record([DOC1])
        assert [e.key for e in routed.reach(["acme corp"], 1, 20, 200).entities] == [
            "acme corp",
            "widget x",
        ]
    finally:
        routed.close()
    assert "ROUTE" in fake.messages


def test_an_unreachable_server_is_unavailable():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = open_store(f"bolt://127.0.0.1:{port}")
    try:
        reason = unavailable(store.prepare)
        assert reason == f"cannot reach the graph at bolt://127.0.0.1:{port}: connection refused"
        assert "connection refused" in unavailable(store.counts)
    finally:
        store.close()


def test_a_wrong_password_is_refused_without_saying_it(fake):
    wrong = "wrong-pw-0451"
    store = open_store(fake.uri(), password=wrong)
    try:
        reason = unavailable(store.prepare, password=wrong)
        assert reason == f"the graph at {fake.uri()} refused GRAPH_USER/GRAPH_PASSWORD"
        assert PASSWORD not in reason
        unavailable(lambda: store.reach(["x"], 1, 20, 200), password=wrong)
    finally:
        store.close()


def test_a_hanging_server_times_out(fake, store):
    store.record([DOC1])
    fake.hang_next(30, times=10)
    started = time.monotonic()
    reason = unavailable(store.counts)
    # the reads are bounded by the timeout, and no retry goes past it
    assert time.monotonic() - started < TIMEOUT + 0.4
    assert reason == f"cannot reach the graph at {fake.uri()}: timed out"
    fake.clear_faults()  # the timed-out connection was dropped, a new one answers
    assert store.counts().entities == 3


def test_a_failure_mid_record_rolls_back_and_is_unavailable(fake, store):
    store.record([DOC1])
    before = store.counts()
    fake.clear_records()
    fake.fail_next("Neo.DatabaseError.General.UnknownError", "disk on fire", times=1)
    # the first RUN (forget_relations) is answered FAILURE: nothing of the record commits
    reason = unavailable(lambda: store.record([DOC2, DocumentGraph(1, ())]))
    assert reason == (
        f"the graph at {fake.uri()} failed the query: Neo.DatabaseError.General.UnknownError"
    )
    assert "COMMIT" not in fake.messages and "RESET" in fake.messages
    assert store.counts() == before


def test_a_transient_failure_is_retried_then_given_up(fake, store):
    store.record([DOC1])
    fake.fail_next("Neo.TransientError.General.DatabaseUnavailable", "restarting")
    assert store.counts() == GraphCounts(entities=3, mentions=4, relations=2)
    fake.fail_next("Neo.TransientError.General.DatabaseUnavailable", "restarting", times=100)
    fake.clear_records()
    reason = unavailable(store.counts)
    assert reason.endswith("Neo.TransientError.General.DatabaseUnavailable")
    assert fake.tags() == ["counts"] * 3  # a few quick attempts, then given up


def test_a_connection_dropped_mid_query(fake, store):
    store.record([DOC1])
    fake.drop_next(times=100)
    reason = unavailable(lambda: store.reach(["acme corp"], 1, 20, 200))
    assert reason.startswith(f"cannot reach the graph at {fake.uri()}: ")
    fake.clear_records()
    fake.drop_next()  # once: the driver retries on a new connection
    assert len(store.reach(["acme corp"], 1, 20, 200).entities) == 2
    fake.drop_connections()  # the pool's idle connections are dead: found and replaced
    assert store.counts().entities == 3


def test_a_stopped_server_then_started_again(fake, store):
    store.record([DOC1])
    fake.stop()
    assert "connection refused" in unavailable(store.counts)
    fake.start()
    assert store.counts().entities == 3


@pytest.mark.parametrize(
    "uri", ["http://127.0.0.1:7474", "https://db.example", "127.0.0.1:7687", "bolt+x://h", ""]
)
def test_a_bad_scheme_names_graph_uri(uri):
    with pytest.raises(ValueError, match="GRAPH_URI"):
        Neo4jGraphStore(uri, "neo4j", PASSWORD, timeout_seconds=TIMEOUT)


@pytest.mark.parametrize("scheme", ["bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"])
def test_every_neo4j_scheme_is_accepted(scheme):
    Neo4jGraphStore(f"{scheme}://127.0.0.1:7687", "neo4j", PASSWORD, timeout_seconds=1).close()
