"""The knowledge graph on a Neo4j server, through the official driver's sync API.

Model: ``(:Chunk {id, document_id})-[:MENTIONS]->(:Entity {key, id, name, kind})``, and
a relation as ``(:Entity)-[:RELATED {kind, chunk_id, document_id}]->(:Entity)``, one per
chunk that states it, so a relation's weight is its distinct ``chunk_id``s and forgetting a
document removes exactly what its chunks contributed (``ragcore.knowledge.graph``).

Why the sync driver in a worker thread (``trio.to_thread``, like psycopg's pool) and not the
async driver: that one needs an asyncio loop, and under Trio that means trio-asyncio, a
bridge between two event loops with its own moving parts; the graph's calls are few and
short, so a thread each is simpler and costs nothing that matters.

Every query begins with a ``// ragchat:<name>`` comment: it names the query in Neo4j's
query log, and the fake server of the tests (``tests/io/fakes/bolt_server.py``) runs the
query by that name. Every value is bound as a parameter, never formatted into Cypher.

Timeouts bound everything: connecting, acquiring a connection from the (small) pool,
writing, the server's transaction timeout, reading an answer (``_bound_reads``), and the
retries of a failed transaction (``_run``): a call gives up after about
``timeout_seconds``. Every driver error becomes ``GraphUnavailable`` with a
short reason that names the server, never the password.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import neo4j
import neo4j.exceptions

from ragcore.knowledge.graph import (
    DocumentGraph,
    EntityDetail,
    EntitySummary,
    GraphCounts,
    Mention,
    Neighbour,
    Neighbourhood,
    ReachedEntity,
)
from ragcore.settings import GRAPH_URI_SCHEMES
from ragio.graph.store import GraphUnavailable

#: connections the pool keeps: the graph's calls are few, each one transaction
POOL_SIZE = 4
#: attempts at a transaction that fails retryably (see ``_run``), and the pause before each
ATTEMPTS = 3
RETRY_DELAY = 0.05
#: how many nodes ``clear`` deletes a transaction, so a large graph never needs one huge one
CLEAR_BATCH = 10_000

_T = TypeVar("_T")

# --- the queries ----------------------------------------------------------------------------

# Schema: created by prepare(), idempotently. Entity.key is unique (entities are merged by
# it); Chunk.id too; the lookups by Entity.id, Chunk.document_id and RELATED.document_id
# (forget) are indexed.
SCHEMA = (
    "// ragchat:constraint_entity_key\n"
    "CREATE CONSTRAINT ragchat_entity_key IF NOT EXISTS "
    "FOR (e:Entity) REQUIRE e.key IS UNIQUE",
    "// ragchat:constraint_chunk_id\n"
    "CREATE CONSTRAINT ragchat_chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
    "// ragchat:index_entity_id\n"
    "CREATE INDEX ragchat_entity_id IF NOT EXISTS FOR (e:Entity) ON (e.id)",
    "// ragchat:index_chunk_document\n"
    "CREATE INDEX ragchat_chunk_document IF NOT EXISTS FOR (c:Chunk) ON (c.document_id)",
    "// ragchat:index_related_document\n"
    "CREATE INDEX ragchat_related_document IF NOT EXISTS "
    "FOR ()-[r:RELATED]-() ON (r.document_id)",
)

FORGET_RELATIONS = """// ragchat:forget_relations
MATCH (:Entity)-[r:RELATED]->(:Entity) WHERE r.document_id IN $document_ids
DELETE r"""

# Deletes the documents' chunks with their mentions; returns the keys of the entities they
# mentioned, the only ones forget_orphans need to look at.
FORGET_CHUNKS = """// ragchat:forget_chunks
MATCH (c:Chunk) WHERE c.document_id IN $document_ids
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
WITH collect(DISTINCT c) AS chunks, collect(DISTINCT e.key) AS keys
FOREACH (c IN chunks | DETACH DELETE c)
RETURN keys"""

FORGET_ORPHANS = """// ragchat:forget_orphans
UNWIND $keys AS key
MATCH (e:Entity {key: key}) WHERE NOT (e)<-[:MENTIONS]-(:Chunk)
DETACH DELETE e"""

# An entity keeps the name and kind it was first recorded with.
RECORD_ENTITIES = """// ragchat:record_entities
UNWIND $rows AS row
MERGE (e:Entity {key: row.key})
ON CREATE SET e.id = row.id, e.name = row.name, e.kind = row.kind"""

RECORD_CHUNKS = """// ragchat:record_chunks
UNWIND $rows AS row
MERGE (c:Chunk {id: row.id})
SET c.document_id = row.document_id"""

RECORD_MENTIONS = """// ragchat:record_mentions
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk_id})
MATCH (e:Entity {key: row.key})
MERGE (c)-[:MENTIONS]->(e)"""

RECORD_RELATIONS = """// ragchat:record_relations
UNWIND $rows AS row
MATCH (a:Entity {key: row.source})
MATCH (b:Entity {key: row.target})
MERGE (a)-[r:RELATED {kind: row.kind, chunk_id: row.chunk_id}]->(b)
SET r.document_id = row.document_id"""

# The entities with these keys, their number of mentioning chunks, and those chunks' ids
# when there are at most $max_mentions (an entity in thousands of chunks lists none).
REACH_ENTITIES = """// ragchat:reach_entities
UNWIND $keys AS key
MATCH (e:Entity {key: key})
WITH e, COUNT { (e)<-[:MENTIONS]-(:Chunk) } AS mentions
RETURN e.key AS key, mentions,
       CASE WHEN mentions <= $max_mentions
            THEN [(e)<-[:MENTIONS]-(c:Chunk) | c.id] ELSE [] END AS chunk_ids"""

# For each of these entities, its strongest $max_neighbours neighbours (either direction,
# any kind; weight: distinct chunks relating the two), ties by key.
REACH_NEIGHBOURS = """// ragchat:reach_neighbours
UNWIND $keys AS key
MATCH (e:Entity {key: key})-[r:RELATED]-(n:Entity)
WHERE n.key <> key
WITH key, n.key AS neighbour, count(DISTINCT r.chunk_id) AS weight
ORDER BY key, weight DESC, neighbour
WITH key, collect({key: neighbour, weight: weight})[..$max_neighbours] AS neighbours
RETURN key, neighbours"""

_MATCHING = """MATCH (e:Entity)
WHERE $needle = '' OR toLower(e.name) CONTAINS $needle OR toLower(e.key) CONTAINS $needle"""

COUNT_ENTITIES = f"""// ragchat:count_entities
{_MATCHING}
RETURN count(e) AS total"""

FIND_ENTITIES = f"""// ragchat:find_entities
{_MATCHING}
OPTIONAL MATCH (e)<-[:MENTIONS]-(c:Chunk)
WITH e, count(c) AS mentions, count(DISTINCT c.document_id) AS documents
RETURN e.id AS id, e.key AS key, e.name AS name, e.kind AS kind, mentions, documents
ORDER BY mentions DESC, key
SKIP $offset LIMIT $limit"""

ENTITY = """// ragchat:entity
MATCH (e:Entity {id: $id})
OPTIONAL MATCH (e)<-[:MENTIONS]-(c:Chunk)
WITH e, count(c) AS mentions, count(DISTINCT c.document_id) AS documents
RETURN e.id AS id, e.key AS key, e.name AS name, e.kind AS kind, mentions, documents"""

ENTITY_MENTIONS = """// ragchat:entity_mentions
MATCH (:Entity {id: $id})<-[:MENTIONS]-(c:Chunk)
RETURN c.id AS chunk_id, c.document_id AS document_id
ORDER BY chunk_id
LIMIT $limit"""

ENTITY_NEIGHBOURS = """// ragchat:entity_neighbours
MATCH (e:Entity {id: $id})-[r:RELATED]-(n:Entity)
WHERE n <> e
WITH n, count(DISTINCT r.chunk_id) AS weight, collect(DISTINCT r.kind) AS kinds
OPTIONAL MATCH (n)<-[:MENTIONS]-(c:Chunk)
WITH n, weight, kinds, count(c) AS mentions, count(DISTINCT c.document_id) AS documents
RETURN n.id AS id, n.key AS key, n.name AS name, n.kind AS kind, mentions, documents,
       weight, kinds
ORDER BY weight DESC, key"""

COUNTS = """// ragchat:counts
OPTIONAL MATCH (e:Entity) WITH count(e) AS entities
OPTIONAL MATCH (:Chunk)-[m:MENTIONS]->(:Entity) WITH entities, count(m) AS mentions
OPTIONAL MATCH (:Entity)-[r:RELATED]->(:Entity)
RETURN entities, mentions, count(r) AS relations"""

# Only the graph's own labels: the database may hold other data.
CLEAR = """// ragchat:clear
MATCH (n) WHERE n:Entity OR n:Chunk
WITH n LIMIT $batch
DETACH DELETE n
RETURN count(*) AS deleted"""


# --- the store --------------------------------------------------------------------------------


class Neo4jGraphStore:
    """``GraphStore`` on Neo4j (``ragio.graph.store``). Thread-safe: the driver is."""

    kind = "neo4j"

    def __init__(self, uri: str, user: str, password: str, *, timeout_seconds: float) -> None:
        parts = urlsplit(uri)
        if parts.scheme not in GRAPH_URI_SCHEMES or not parts.hostname:
            schemes = ", ".join(s + "://" for s in GRAPH_URI_SCHEMES)
            raise ValueError(
                f"GRAPH_URI must be a Neo4j address ({schemes}"
                f"host:port); got scheme {parts.scheme + '://' if parts.scheme else 'none'}"
            )
        if timeout_seconds <= 0:
            raise ValueError("the graph's timeout must be positive")
        # the address as reasons name it: scheme, host and port, never a user or password
        port = f":{parts.port}" if parts.port else ""
        self.address = f"{parts.scheme}://{parts.hostname}{port}"
        self._timeout = timeout_seconds
        self._driver = neo4j.GraphDatabase.driver(
            uri,
            auth=(user, password),
            max_connection_pool_size=POOL_SIZE,
            connection_timeout=timeout_seconds,
            connection_acquisition_timeout=timeout_seconds,
            connection_write_timeout=timeout_seconds,
            user_agent="ragchat",
        )

    # --- GraphStore ---

    def prepare(self) -> None:
        def create(statement: str) -> Callable[[neo4j.Transaction], None]:
            def work(tx: neo4j.Transaction) -> None:
                tx.run(statement).consume()

            return work

        with self._errors():
            self._driver.verify_connectivity()
            # schema commands cannot share a transaction with anything else: one each
            for statement in SCHEMA:
                self._write(create(statement))

    def record(self, documents: Sequence[DocumentGraph]) -> None:
        latest = {document.document_id: document for document in documents}  # last one wins
        if not latest:
            return
        entities, chunks, mentions, relations = _rows(latest.values())
        document_ids = list(latest)

        def work(tx: neo4j.Transaction) -> None:
            keys = _forget(tx, document_ids)
            for query, rows in (
                (RECORD_ENTITIES, entities),
                (RECORD_CHUNKS, chunks),
                (RECORD_MENTIONS, mentions),
                (RECORD_RELATIONS, relations),
            ):
                if rows:
                    tx.run(query, rows=rows).consume()
            # after the writes: an entity the new version still mentions stays as it is
            if keys:
                tx.run(FORGET_ORPHANS, keys=keys).consume()

        self._write(work)

    def forget(self, document_ids: Sequence[int]) -> None:
        ids = sorted(set(document_ids))
        if not ids:
            return

        def work(tx: neo4j.Transaction) -> None:
            keys = _forget(tx, ids)
            if keys:
                tx.run(FORGET_ORPHANS, keys=keys).consume()

        self._write(work)

    def clear(self) -> None:
        def work(tx: neo4j.Transaction) -> int:
            record = tx.run(CLEAR, batch=CLEAR_BATCH).single(strict=True)
            return int(record["deleted"])

        while self._write(work) >= CLEAR_BATCH:
            pass

    def reach(
        self, keys: Sequence[str], hops: int, max_neighbours: int, max_mentions: int
    ) -> Neighbourhood:
        """The rule in ``ragcore.knowledge.graph``, in one read transaction: Cypher fetches
        each hop's neighbours (strongest ``max_neighbours``, ties by key) and the reached
        entities' mentions; which entity is reached at which hop with which link is decided
        here, in Python, where the rule is plain to read. A neighbour already reached
        still takes one of the ``max_neighbours`` places."""

        def work(tx: neo4j.Transaction) -> Neighbourhood:
            reached: dict[str, tuple[int, int]] = {}  # key -> (hop, link)
            details = _reach_entities(tx, sorted(set(keys)), max_mentions)
            for key in details:
                reached[key] = (0, 0)
            # an entity named by more than max_mentions chunks is not followed
            frontier = sorted(k for k in details if details[k][0] <= max_mentions)
            for hop in range(1, max(hops, 0) + 1):
                if not frontier or max_neighbours <= 0:
                    break
                links: dict[str, int] = {}
                result = tx.run(REACH_NEIGHBOURS, keys=frontier, max_neighbours=max_neighbours)
                for record in result:
                    neighbours = sorted(
                        ((str(n["key"]), int(n["weight"])) for n in record["neighbours"]),
                        key=lambda item: (-item[1], item[0]),
                    )[:max_neighbours]
                    for key, weight in neighbours:
                        if key not in reached:
                            links[key] = max(links.get(key, 0), weight)
                arrived = sorted(links)
                if not arrived:
                    break
                details.update(_reach_entities(tx, arrived, max_mentions))
                for key in arrived:
                    reached[key] = (hop, links[key])
                frontier = [k for k in arrived if k in details and details[k][0] <= max_mentions]
            found = [
                ReachedEntity(
                    key=key,
                    hop=hop,
                    mentions=details[key][0],
                    link=link,
                    chunk_ids=details[key][1],
                )
                for key, (hop, link) in reached.items()
                if key in details
            ]
            found.sort(key=lambda entity: (entity.hop, entity.key))
            return Neighbourhood(entities=tuple(found))

        if not keys:
            return Neighbourhood()
        return self._read(work)

    def find_entities(self, query: str, limit: int, offset: int) -> tuple[list[EntitySummary], int]:
        needle = query.lower()  # literally: spaces and all; bound, never formatted

        def work(tx: neo4j.Transaction) -> tuple[list[EntitySummary], int]:
            total = int(tx.run(COUNT_ENTITIES, needle=needle).single(strict=True)["total"])
            if limit <= 0 or offset >= total:
                return [], total
            result = tx.run(FIND_ENTITIES, needle=needle, offset=max(offset, 0), limit=limit)
            return [_summary(record) for record in result], total

        return self._read(work)

    def entity(self, entity_id: str, mention_limit: int) -> EntityDetail | None:
        def work(tx: neo4j.Transaction) -> EntityDetail | None:
            found = tx.run(ENTITY, id=entity_id).single()
            if found is None:
                return None
            mentions: tuple[Mention, ...] = ()
            if mention_limit > 0:
                mentions = tuple(
                    Mention(chunk_id=int(r["chunk_id"]), document_id=int(r["document_id"]))
                    for r in tx.run(ENTITY_MENTIONS, id=entity_id, limit=mention_limit)
                )
            neighbours = [
                Neighbour(
                    entity=_summary(r), weight=int(r["weight"]), kinds=tuple(sorted(r["kinds"]))
                )
                for r in tx.run(ENTITY_NEIGHBOURS, id=entity_id)
            ]
            neighbours.sort(key=lambda n: (-n.weight, n.entity.key))
            return EntityDetail(
                entity=_summary(found), mentions=mentions, neighbours=tuple(neighbours)
            )

        return self._read(work)

    def counts(self) -> GraphCounts:
        def work(tx: neo4j.Transaction) -> GraphCounts:
            record = tx.run(COUNTS).single(strict=True)
            return GraphCounts(
                entities=int(record["entities"]),
                mentions=int(record["mentions"]),
                relations=int(record["relations"]),
            )

        return self._read(work)

    def close(self) -> None:
        # closing connections to a server already gone is no error
        with contextlib.suppress(
            neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError, OSError
        ):
            self._driver.close()

    # --- running ---

    def _write(self, work: Callable[[neo4j.Transaction], _T]) -> _T:
        return self._run(work, write=True)

    def _read(self, work: Callable[[neo4j.Transaction], _T]) -> _T:
        return self._run(work, write=False)

    def _run(self, work: Callable[[neo4j.Transaction], _T], *, write: bool) -> _T:
        """Run ``work`` in one transaction, all of it within the timeout.

        Retried here, not by the driver's ``execute_*``: its retries wait a second and
        more between attempts, and start counting only after the first attempt, so a
        hanging server would hold the caller for several timeouts. Here a retryable failure
        (a pooled connection the server has closed, a leader switch) is tried again only
        while the time left allows, each attempt's reads bounded by what is left."""
        deadline = time.monotonic() + self._timeout
        mode = neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS
        with self._errors():
            for attempt in range(1, ATTEMPTS + 1):
                left = deadline - time.monotonic()
                try:
                    with (
                        self._driver.session(default_access_mode=mode) as session,
                        # the server ends a transaction that runs longer
                        session.begin_transaction(timeout=self._timeout) as tx,
                    ):
                        _bound_reads(tx, max(left, 0.001))
                        result = work(tx)
                        tx.commit()
                        return result
                except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as error:
                    left = deadline - time.monotonic()
                    if attempt == ATTEMPTS or not error.is_retryable() or left <= RETRY_DELAY:
                        raise
                time.sleep(RETRY_DELAY)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _errors(self) -> _Translate:
        return _Translate(self.address)


def _bound_reads(tx: neo4j.Transaction, seconds: float) -> None:
    """Bound how long the driver waits for the server's answer.

    The driver has no read timeout of its own: it applies only the one a server may hint
    (``connection.recv_timeout_seconds``), so a server or network that stops answering
    would hold this thread forever. This sets that same socket timeout on the
    transaction's connection, the way the hint does. It reaches into the driver's private
    connection, hence every step is looked up; should a later driver move it, the server's
    transaction timeout and the pool's timeouts still apply."""
    connection = getattr(tx, "_connection", None)
    set_read_timeout = getattr(getattr(connection, "socket", None), "set_read_timeout", None)
    if callable(set_read_timeout):
        set_read_timeout(seconds)


def _forget(tx: neo4j.Transaction, document_ids: list[int]) -> list[str]:
    """Delete the documents' relations, chunks and mentions; the keys of the entities those
    chunks mentioned (orphans among them are deleted by the caller, after any writes)."""
    tx.run(FORGET_RELATIONS, document_ids=document_ids).consume()
    record = tx.run(FORGET_CHUNKS, document_ids=document_ids).single()
    return sorted(str(key) for key in record["keys"]) if record else []


def _reach_entities(
    tx: neo4j.Transaction, keys: list[str], max_mentions: int
) -> dict[str, tuple[int, tuple[int, ...]]]:
    """key -> (mentions, chunk ids ascending or () above ``max_mentions``), for the keys
    that are stored."""
    found: dict[str, tuple[int, tuple[int, ...]]] = {}
    for record in tx.run(REACH_ENTITIES, keys=keys, max_mentions=max_mentions):
        mentions = int(record["mentions"])
        chunk_ids = tuple(sorted({int(i) for i in record["chunk_ids"]}))
        found[str(record["key"])] = (mentions, chunk_ids if mentions <= max_mentions else ())
    return found


def _summary(record: neo4j.Record) -> EntitySummary:
    return EntitySummary(
        id=str(record["id"]),
        key=str(record["key"]),
        name=str(record["name"]),
        kind=str(record["kind"]),
        mentions=int(record["mentions"]),
        documents=int(record["documents"]),
    )


def _rows(
    documents: Iterable[DocumentGraph],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The four batches a record() writes: entities (first name and kind seen), chunks,
    mentions, relations. A relation is kept only between two different entities its own
    chunk names (a relation to an entity the chunk does not name would invent a mention)."""
    entities: dict[str, dict[str, Any]] = {}
    chunks: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    relations: list[dict[str, Any]] = []
    for document in documents:
        for chunk in document.chunks:
            named = {entity.key for entity in chunk.entities}
            if not named:
                continue
            chunks.append({"id": chunk.chunk_id, "document_id": document.document_id})
            for entity in chunk.entities:
                entities.setdefault(
                    entity.key,
                    {"key": entity.key, "id": entity.id, "name": entity.name, "kind": entity.kind},
                )
            for key in sorted(named):
                mentions.append({"chunk_id": chunk.chunk_id, "key": key})
            stated = {
                (r.source, r.target, r.kind)
                for r in chunk.relations
                if r.source != r.target and r.source in named and r.target in named
            }
            for source, target, kind in sorted(stated):
                relations.append(
                    {
                        "source": source,
                        "target": target,
                        "kind": kind,
                        "chunk_id": chunk.chunk_id,
                        "document_id": document.document_id,
                    }
                )
    return list(entities.values()), chunks, mentions, relations


class _Translate:
    """A context manager turning the driver's errors into ``GraphUnavailable`` with a short
    reason: which server, and what went wrong, never the password."""

    def __init__(self, address: str) -> None:
        self.address = address

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: Any
    ) -> None:
        if error is None or isinstance(error, GraphUnavailable):
            return
        reason = _reason(error, self.address)
        if reason is not None:
            raise GraphUnavailable(reason) from error


def _reason(error: BaseException, address: str) -> str | None:
    """The reason for ``error``, or None when it is not the graph's (a bug: let it raise)."""
    exceptions = neo4j.exceptions
    if isinstance(error, exceptions.AuthError):
        return f"the graph at {address} refused GRAPH_USER/GRAPH_PASSWORD"
    if isinstance(error, exceptions.Forbidden):
        return f"the graph at {address} does not allow GRAPH_USER this ({error.code})"
    if isinstance(error, exceptions.Neo4jError):
        # the code only: a message may quote the query's data
        return f"the graph at {address} failed the query: {error.code}"
    if isinstance(error, exceptions.ConnectionAcquisitionTimeoutError):
        return f"the graph at {address} did not answer in time (no free connection)"
    if isinstance(error, exceptions.DriverError | OSError):
        return f"cannot reach the graph at {address}: {_cause(error)}"
    return None


def _cause(error: BaseException) -> str:
    """What went wrong on the wire, from the exception and the ones that caused it."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    texts = [str(e).lower() for e in chain]
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or any(
        "connection refused" in t for t in texts
    ):
        return "connection refused"
    if any(isinstance(e, TimeoutError | socket.timeout) for e in chain) or any(
        "timed out" in t for t in texts
    ):
        return "timed out"
    if any(isinstance(e, socket.gaierror) for e in chain):
        return "unknown host"
    if any(isinstance(e, ConnectionError | neo4j.exceptions.SessionExpired) for e in chain) or any(
        "defunct connection" in t for t in texts
    ):
        return "connection lost"
    return "unavailable"
