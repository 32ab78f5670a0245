"""The service's knowledge graph: its store, whether it works, and keeping it level with
the documents.

The graph never fails a question or an upload. A store that cannot be reached or used
(``GraphUnavailable``) makes the graph *degraded*: ``/health`` says so and why, the log
says it once (and once again when it recovers), questions are answered from hybrid search
alone, and the store is not tried again for ``RETRY_SECONDS`` (a Neo4j that times out
would otherwise cost every question its timeout).

Documents stored are recorded (``learn``) as they are stored, whichever way they arrive
(uploads, jobs, ``ragchat ingest``), and the versions they replace forgotten; a deleted
document is forgotten as it is deleted. Which documents the graph holds is kept in
``graph_documents`` (migration 020), whatever the store: ``level`` compares it with the
documents, records what the graph lacks and forgets what is gone. It runs when the
service starts, so what was stored or deleted while the graph was off or down is caught
up, whenever the store answers again after documents could not reach it
(``keep_level``), and by ``ragchat graph rebuild`` after clearing the store.

Neo4j's driver is an extra (``pip install 'ragchat[graph]'``): nothing here imports it
unless GRAPH_URI chooses that store, and then ``check_graph_driver`` (first thing when the
service opens) turns its absence into ``GraphDriverMissing``, a start-up error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs
import psycopg
import trio

from ragcore.api.graph import GRAPH_OFF
from ragcore.knowledge.graph import (
    DocumentGraph,
    EntityDetail,
    EntitySummary,
    GraphCounts,
    Neighbourhood,
    ReachGraph,
)
from ragcore.knowledge.graph_rules import ModelExtraction, document_graph, with_model
from ragcore.settings import Settings, graph_store_kind
from ragio.db.pool import Database
from ragio.graph.postgres import PostgresGraphStore
from ragio.graph.store import GraphStore, GraphUnavailable

if TYPE_CHECKING:
    from ragio.graph.neo4j import Neo4jGraphStore

log = logging.getLogger(__name__)
T = TypeVar("T")
#: runs a pipeline on the service (``ragio.runner.run``), for the model's extraction
PipelineRunner = Callable[[Generator[Any, Any, DocumentGraph]], Awaitable[DocumentGraph]]

#: after a failure, how long the store is left alone before it is tried again
RETRY_SECONDS = 30.0
#: how often ``keep_level`` looks whether the store may be tried again
LEVEL_POLL_SECONDS = 0.5
#: documents recorded in one store transaction while levelling
LEVEL_BATCH = 64
#: at most this many store calls at once (each holds a worker thread)
CONCURRENT_CALLS = 4


@attrs.frozen
class GraphStatus:
    """``/health``'s view: off (not configured), ok, or degraded with the reason."""

    status: Literal["off", "ok", "degraded"]
    store: str | None = None
    reason: str | None = None


@attrs.frozen
class Levelled:
    """What one ``level`` did."""

    recorded: int = 0
    forgotten: int = 0


class Graph:
    """The knowledge graph of one service process; ``Graph.off()`` when not turned on."""

    def __init__(
        self,
        store: GraphStore | None,
        database: Database | None = None,
        *,
        domain_terms: Sequence[str] = (),
        timeout_seconds: float = 5.0,
    ) -> None:
        self.store = store
        self.database = database
        self.domain_terms = tuple(domain_terms)
        self.timeout_seconds = timeout_seconds
        self.retry_seconds = RETRY_SECONDS
        self._failure: str | None = None
        self._failed_at = 0.0
        self._prepared = False
        self._level_lock = trio.Lock()
        self._limiter = trio.CapacityLimiter(CONCURRENT_CALLS)
        self._model: tuple[PipelineRunner, ModelExtraction] | None = None
        self._behind = trio.Event()  # set when a document could not be learned or forgotten

    def extract_with_model(self, runner: PipelineRunner, policy: ModelExtraction) -> None:
        """GRAPH_MODEL_EXTRACTION: a language model also reads the chunks recorded."""
        self._model = (runner, policy)

    @classmethod
    def off(cls) -> Graph:
        return cls(None)

    @property
    def on(self) -> bool:
        return self.store is not None

    def status(self) -> GraphStatus:
        if self.store is None:
            return GraphStatus("off", reason=GRAPH_OFF)
        if self._failure is not None:
            return GraphStatus("degraded", self.store.kind, self._failure)
        return GraphStatus("ok", self.store.kind)

    # --- calling the store ---------------------------------------------------------------

    async def _call(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in a worker thread, given up after the timeout; a failure marks
        the graph degraded (logged once) and is raised as ``GraphUnavailable``."""
        assert self.store is not None  # callers see ``on`` first
        if self._failure is not None and time.monotonic() - self._failed_at < self.retry_seconds:
            raise GraphUnavailable(self._failure)
        try:
            if not self._prepared:
                await self._in_thread(self.store.prepare)
                self._prepared = True
            result = await self._in_thread(work, *args)
        except GraphUnavailable as error:
            self._failed(str(error))
            raise
        if self._failure is not None:
            log.info("knowledge graph (%s) recovered", self.store.kind)
            self._failure = None
        return result

    async def _in_thread(self, work: Callable[..., T], *args: Any) -> T:
        with trio.move_on_after(self.timeout_seconds) as scope:
            return await trio.to_thread.run_sync(
                partial(work, *args), limiter=self._limiter, abandon_on_cancel=True
            )
        assert scope.cancelled_caught
        raise GraphUnavailable(f"the graph store did not answer within {self.timeout_seconds:g} s")

    def _failed(self, reason: str) -> None:
        if self._failure != reason:  # once, not per request
            assert self.store is not None
            log.warning(
                "knowledge graph (%s) degraded: %s; answers use hybrid search alone",
                self.store.kind,
                reason,
            )
        self._failure = reason
        self._failed_at = time.monotonic()
        self._prepared = False

    # --- questions -----------------------------------------------------------------------

    async def reach(self, effect: ReachGraph) -> Neighbourhood:
        """The ``ReachGraph`` effect: empty when the graph is off or unavailable."""
        if self.store is None or not effect.keys:
            return Neighbourhood()
        try:
            return await self._call(
                self.store.reach,
                effect.keys,
                effect.hops,
                effect.max_neighbours,
                effect.max_mentions,
            )
        except GraphUnavailable:
            return Neighbourhood()

    async def find_entities(
        self, query: str, limit: int, offset: int
    ) -> tuple[list[EntitySummary], int]:
        assert self.store is not None
        return await self._call(self.store.find_entities, query, limit, offset)

    async def entity(self, public_id: str, mention_limit: int) -> EntityDetail | None:
        assert self.store is not None
        return await self._call(self.store.entity, public_id, mention_limit)

    async def counts(self) -> GraphCounts:
        assert self.store is not None
        return await self._call(self.store.counts)

    # --- keeping it level with the documents ----------------------------------------------

    async def learn(self, stored: Sequence[int], gone: Sequence[int] = ()) -> None:
        """The documents just ``stored`` are recorded, those ``gone`` (deleted, replaced)
        forgotten, at once: an upload is in the graph when its request returns. Never
        raises for the store: what fails is left to the next ``level``."""
        if self.store is None or self.database is None:
            return
        try:
            if gone:
                await self._forget(gone)
            for start in range(0, len(stored), LEVEL_BATCH):
                await self._record(stored[start : start + LEVEL_BATCH])
        except GraphUnavailable:
            self._behind.set()  # keep_level catches up once the store answers again

    async def keep_level(self) -> None:
        """Run beside the app: level the graph at start, and again whenever a document
        could not be learned or forgotten, once the store may be tried again (every
        ``retry_seconds`` until it answers). So a store that was down catches up by
        itself."""
        if self.store is None:
            return
        while True:
            self._behind = trio.Event()
            await self.level()
            if self._failure is None and not self._behind.is_set():
                await self._behind.wait()
            while self._failure is not None and (
                time.monotonic() - self._failed_at < self.retry_seconds
            ):
                await trio.sleep(LEVEL_POLL_SECONDS)
            await trio.sleep(LEVEL_POLL_SECONDS)

    async def level(self) -> Levelled:
        """Record the documents the graph does not hold and forget those deleted: what
        was stored or deleted while the graph was off or down. Never raises for the
        store: a failure leaves the rest for the next ``level``."""
        if self.store is None or self.database is None:
            return Levelled()
        async with self._level_lock:
            try:
                return await self._level()
            except GraphUnavailable:
                return Levelled()

    async def _level(self) -> Levelled:
        assert self.store is not None and self.database is not None
        new, gone = await self.database.run(pending, self.store.kind)
        if gone:
            await self._forget(gone)
        for start in range(0, len(new), LEVEL_BATCH):
            await self._record(new[start : start + LEVEL_BATCH])
        return Levelled(len(new), len(gone))

    async def _record(self, document_ids: Sequence[int]) -> None:
        assert self.store is not None and self.database is not None
        chunks = await self.database.run(chunk_texts, document_ids)
        graphs = await trio.to_thread.run_sync(
            partial(_extract, document_ids, chunks, self.domain_terms)
        )
        if self._model is not None:
            runner, policy = self._model
            graphs = [
                await runner(
                    with_model(graph, [t for _, t in chunks.get(graph.document_id, [])], policy)
                )
                for graph in graphs
            ]
        await self._call(self.store.record, graphs)
        await self.database.run(listed, document_ids, self.store.kind)

    async def _forget(self, document_ids: Sequence[int]) -> None:
        assert self.store is not None and self.database is not None
        await self._call(self.store.forget, document_ids)
        await self.database.run(unlist, document_ids)

    async def rebuild(self) -> Levelled:
        """Clear the store and record every document again (``ragchat graph rebuild``):
        after the extraction rules or DOMAIN_TERMS changed. Raises ``GraphUnavailable``."""
        assert self.store is not None and self.database is not None
        async with self._level_lock:
            await self._call(self.store.clear)
            await self.database.run(unlist_all)
            return await self._level()

    async def close(self) -> None:
        if self.store is not None:
            await trio.to_thread.run_sync(self.store.close)


#: the start-up error when GRAPH_URI chooses Neo4j and its driver is not installed
DRIVER_MISSING = (
    "GRAPH_URI: the knowledge graph on Neo4j needs its driver, which is not installed: "
    "pip install 'ragchat[graph]' (or leave GRAPH_URI blank for the graph in PostgreSQL)"
)


class GraphDriverMissing(Exception):
    """GRAPH_URI chooses the Neo4j store, and the ``neo4j`` package (the graph extra) is
    not installed; ``str()`` says what to do."""


def check_graph_driver(settings: Settings) -> None:
    """Raise ``GraphDriverMissing`` when the settings choose Neo4j and its driver is absent:
    before anything starts, so the service never comes up half-configured."""
    if graph_store_kind(settings) == "neo4j":
        _neo4j_store()


def _neo4j_store() -> type[Neo4jGraphStore]:
    """The Neo4j store's class; importing it imports the driver, only when it is used."""
    try:
        from ragio.graph.neo4j import Neo4jGraphStore
    except ModuleNotFoundError as error:
        # only the driver's own absence: a module missing inside it is a broken install
        if error.name != "neo4j":
            raise
        raise GraphDriverMissing(DRIVER_MISSING) from None
    return Neo4jGraphStore


def build_graph(settings: Settings, database: Database) -> Graph:
    """The graph GRAPH_ENABLED and GRAPH_URI ask for: off, in PostgreSQL, or in Neo4j.
    Raises ``GraphDriverMissing`` (see ``check_graph_driver``)."""
    kind = graph_store_kind(settings)
    if kind is None:
        return Graph.off()
    store: GraphStore
    if kind == "neo4j":
        store = _neo4j_store()(
            settings.graph_uri,
            settings.graph_user,
            settings.graph_password,
            timeout_seconds=settings.graph_timeout_seconds,
        )
    else:
        store = PostgresGraphStore(database.pool)
    return Graph(
        store,
        database,
        domain_terms=settings.domain_terms,
        timeout_seconds=settings.graph_timeout_seconds,
    )


def _extract(
    document_ids: Sequence[int],
    chunks: dict[int, list[tuple[int, str]]],
    domain_terms: Sequence[str],
) -> list[DocumentGraph]:
    return [document_graph(doc, chunks.get(doc, []), domain_terms) for doc in document_ids]


# --- graph_documents -----------------------------------------------------------------------


def pending(conn: psycopg.Connection, store: str) -> tuple[list[int], list[int]]:
    """The documents the graph (in ``store``) does not hold, and those it holds that were
    deleted (or held in another store: the store changed)."""
    new = conn.execute(
        """SELECT d.id FROM documents d
           WHERE NOT EXISTS (SELECT 1 FROM graph_documents g
                             WHERE g.document_id = d.id AND g.store = %s)
           ORDER BY d.id""",
        (store,),
    ).fetchall()
    gone = conn.execute(
        """SELECT g.document_id FROM graph_documents g
           WHERE g.store <> %s
              OR NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = g.document_id)
           ORDER BY g.document_id""",
        (store,),
    ).fetchall()
    return [row[0] for row in new], [row[0] for row in gone]


def chunk_texts(
    conn: psycopg.Connection, document_ids: Sequence[int]
) -> dict[int, list[tuple[int, str]]]:
    """Each document's chunks (id, text), in order."""
    rows = conn.execute(
        """SELECT document_id, id, text FROM chunks WHERE document_id = ANY(%s)
           ORDER BY document_id, position""",
        (list(document_ids),),
    ).fetchall()
    found: dict[int, list[tuple[int, str]]] = {}
    for document_id, chunk_id, text in rows:
        found.setdefault(document_id, []).append((chunk_id, text))
    return found


def listed(conn: psycopg.Connection, document_ids: Sequence[int], store: str) -> None:
    conn.execute(
        """INSERT INTO graph_documents (document_id, store)
           SELECT unnest(%s::bigint[]), %s
           ON CONFLICT (document_id) DO UPDATE SET store = excluded.store,
                                                   recorded_at = now()""",
        (list(document_ids), store),
    )


def unlist(conn: psycopg.Connection, document_ids: Sequence[int]) -> None:
    conn.execute("DELETE FROM graph_documents WHERE document_id = ANY(%s)", (list(document_ids),))


def unlist_all(conn: psycopg.Connection) -> None:
    conn.execute("DELETE FROM graph_documents")
