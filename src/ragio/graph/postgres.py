"""The knowledge graph in the service's own PostgreSQL (migration 020): the default store.

Entities, mentions and relations are three tables; mentions and relations reference
their chunk, so a document deleted or replaced takes what it contributed with it.
Writes are batched: a ``record`` is a handful of statements over arrays (``unnest``),
whatever the number of entities. Reaching is one query per hop plus one for the
mentions. Every value is bound as a parameter, never formatted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import psycopg_pool

from ragcore.api.queries import contains_pattern
from ragcore.knowledge.graph import (
    NEIGHBOURS_SHOWN,
    DocumentGraph,
    EntityDetail,
    EntitySummary,
    GraphCounts,
    Mention,
    Neighbour,
    Neighbourhood,
    ReachedEntity,
    entity_id,
)
from ragio.graph.store import GraphUnavailable

# An entity with the number of chunks and documents that mention it, for a graph_entities
# row ``e``.
_SUMMARY = """e.public_id, e.key, e.name, e.kind,
    (SELECT count(*) FROM graph_mentions m WHERE m.entity_id = e.id),
    (SELECT count(DISTINCT c.document_id) FROM graph_mentions m
       JOIN chunks c ON c.id = m.chunk_id WHERE m.entity_id = e.id)"""


def _summary(row: Sequence[Any]) -> EntitySummary:
    return EntitySummary(
        id=row[0], key=row[1], name=row[2], kind=row[3], mentions=row[4], documents=row[5]
    )


class PostgresGraphStore:
    """``GraphStore`` on the service's database pool."""

    kind = "postgres"

    def __init__(self, pool: psycopg_pool.ConnectionPool[Any]) -> None:
        self.pool = pool

    def _connect(self) -> Any:
        try:
            return self.pool.connection()
        except psycopg_pool.PoolTimeout as error:
            raise GraphUnavailable("the database has no free connection") from error

    def prepare(self) -> None:
        with self._connect() as conn:
            self._run(conn, lambda: conn.execute("SELECT 1 FROM graph_entities LIMIT 1"))

    @staticmethod
    def _run(conn: psycopg.Connection, work: Any) -> Any:
        try:
            return work()
        except psycopg.Error as error:  # a lost connection, a missing table, a timeout …
            reason = (error.diag.message_primary if error.diag else None) or type(error).__name__
            raise GraphUnavailable(f"the graph's tables failed: {reason}") from error

    def record(self, documents: Sequence[DocumentGraph]) -> None:
        document_ids = [doc.document_id for doc in documents]
        entities: dict[str, tuple[str, str]] = {}
        mentions: set[tuple[str, int]] = set()
        relations: set[tuple[str, str, str, int]] = set()
        for doc in documents:
            for chunk in doc.chunks:
                for entity in chunk.entities:
                    entities.setdefault(entity.key, (entity.name, entity.kind))
                    mentions.add((entity.key, chunk.chunk_id))
                for relation in chunk.relations:
                    if relation.source != relation.target:
                        relations.add(
                            (relation.source, relation.target, relation.kind, chunk.chunk_id)
                        )
        keys = sorted(entities)
        with self._connect() as conn:

            def write() -> None:
                with conn.transaction():
                    _lock(conn)
                    replaced = _forget_chunks_of(conn, document_ids)
                    conn.execute(
                        """INSERT INTO graph_entities (key, public_id, name, kind)
                           SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])
                           ON CONFLICT (key) DO NOTHING""",
                        (
                            keys,
                            [entity_id(k) for k in keys],
                            [entities[k][0] for k in keys],
                            [entities[k][1] for k in keys],
                        ),
                    )
                    ids = dict(
                        conn.execute(
                            "SELECT key, id FROM graph_entities WHERE key = ANY(%s)", (keys,)
                        ).fetchall()
                    )
                    rows = sorted(mentions)
                    # chunks deleted meanwhile (their document replaced) are skipped
                    conn.execute(
                        """INSERT INTO graph_mentions (entity_id, chunk_id)
                           SELECT m.entity_id, m.chunk_id
                           FROM unnest(%s::bigint[], %s::bigint[]) AS m(entity_id, chunk_id)
                           JOIN chunks c ON c.id = m.chunk_id
                           ON CONFLICT DO NOTHING""",
                        ([ids[key] for key, _ in rows], [chunk for _, chunk in rows]),
                    )
                    stated = sorted(relations)
                    conn.execute(
                        """INSERT INTO graph_relations (source_id, target_id, kind, chunk_id)
                           SELECT r.source_id, r.target_id, r.kind, r.chunk_id
                           FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::bigint[])
                                AS r(source_id, target_id, kind, chunk_id)
                           JOIN chunks c ON c.id = r.chunk_id
                           ON CONFLICT DO NOTHING""",
                        (
                            [ids[r[0]] for r in stated],
                            [ids[r[1]] for r in stated],
                            [r[2] for r in stated],
                            [r[3] for r in stated],
                        ),
                    )
                    if replaced:  # what the earlier version named may be named no more
                        _prune(conn)

            self._run(conn, write)

    def forget(self, document_ids: Sequence[int]) -> None:
        with self._connect() as conn:

            def work() -> None:
                with conn.transaction():
                    _lock(conn)
                    _forget_chunks_of(conn, document_ids)
                    _prune(conn)

            self._run(conn, work)

    def clear(self) -> None:
        with self._connect() as conn:
            self._run(
                conn,
                lambda: conn.execute(
                    "TRUNCATE graph_relations, graph_mentions, graph_entities RESTART IDENTITY"
                ),
            )

    def reach(
        self, keys: Sequence[str], hops: int, max_neighbours: int, max_mentions: int
    ) -> Neighbourhood:
        with self._connect() as conn:
            return self._run(
                conn, lambda: _reach(conn, list(keys), hops, max_neighbours, max_mentions)
            )

    def find_entities(self, query: str, limit: int, offset: int) -> tuple[list[EntitySummary], int]:
        pattern = contains_pattern(query)
        where = "WHERE e.name ILIKE %(p)s OR e.key ILIKE %(p)s" if pattern else ""
        params = {"p": pattern, "limit": limit, "offset": offset}
        with self._connect() as conn:

            def work() -> tuple[list[EntitySummary], int]:
                total = conn.execute(
                    f"SELECT count(*) FROM graph_entities e {where}", params
                ).fetchone()
                rows = conn.execute(
                    f"""SELECT * FROM (SELECT {_SUMMARY} FROM graph_entities e {where}) s
                        ORDER BY 5 DESC, 2 LIMIT %(limit)s OFFSET %(offset)s""",
                    params,
                ).fetchall()
                return [_summary(row) for row in rows], total[0] if total else 0

            return self._run(conn, work)

    def entity(self, public_id: str, mention_limit: int) -> EntityDetail | None:
        with self._connect() as conn:
            return self._run(conn, lambda: _entity(conn, public_id, mention_limit))

    def counts(self) -> GraphCounts:
        with self._connect() as conn:
            row = self._run(
                conn,
                lambda: conn.execute(
                    """SELECT (SELECT count(*) FROM graph_entities),
                              (SELECT count(*) FROM graph_mentions),
                              (SELECT count(*) FROM graph_relations)"""
                ).fetchone(),
            )
            return GraphCounts(entities=row[0], mentions=row[1], relations=row[2])

    def close(self) -> None:
        """The pool is the service's: it closes it."""


#: the transaction-level advisory lock graph writes take, in every process: a prune must
#: not delete an entity another write is adding a mention of
WRITE_LOCK = (1_020, 0)


def _lock(conn: psycopg.Connection) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", WRITE_LOCK)


def _forget_chunks_of(conn: psycopg.Connection, document_ids: Sequence[int]) -> int:
    """Remove the mentions and relations of these documents' chunks; how many mentions."""
    ids = list(document_ids)
    removed = 0
    for table in ("graph_mentions", "graph_relations"):
        cursor = conn.execute(
            f"""DELETE FROM {table} t USING chunks c
                WHERE c.id = t.chunk_id AND c.document_id = ANY(%s)""",
            (ids,),
        )
        removed += cursor.rowcount if table == "graph_mentions" else 0
    return removed


def _prune(conn: psycopg.Connection) -> None:
    """Entities no chunk mentions any more leave (their relations with them)."""
    conn.execute(
        """DELETE FROM graph_entities e
           WHERE NOT EXISTS (SELECT 1 FROM graph_mentions m WHERE m.entity_id = e.id)"""
    )


# The strongest ``max_neighbours`` neighbours of each frontier entity, ties by key, with the
# weight of their relation (the distinct chunks stating one, of any kind, in either
# direction) and how many chunks mention each (counted for those kept only).
_NEIGHBOURS = """
WITH pairs AS (
    SELECT source_id AS a, target_id AS b, chunk_id FROM graph_relations
    WHERE source_id = ANY(%(frontier)s)
    UNION ALL
    SELECT target_id, source_id, chunk_id FROM graph_relations
    WHERE target_id = ANY(%(frontier)s)
),
weighed AS (
    SELECT a, b, count(DISTINCT chunk_id) AS weight FROM pairs GROUP BY a, b
),
ranked AS (
    SELECT w.a, w.b, e.key, w.weight,
           row_number() OVER (PARTITION BY w.a ORDER BY w.weight DESC, e.key) AS place
    FROM weighed w JOIN graph_entities e ON e.id = w.b
)
SELECT r.a, r.b, r.key, r.weight,
       (SELECT count(*) FROM graph_mentions m WHERE m.entity_id = r.b) AS mentions
FROM ranked r WHERE r.place <= %(max_neighbours)s"""


def _reach(
    conn: psycopg.Connection, keys: list[str], hops: int, max_neighbours: int, max_mentions: int
) -> Neighbourhood:
    seeds = conn.execute(
        """SELECT e.id, e.key,
                  (SELECT count(*) FROM graph_mentions m WHERE m.entity_id = e.id)
           FROM graph_entities e WHERE e.key = ANY(%s)""",
        (keys,),
    ).fetchall()
    reached: dict[int, tuple[str, int, int]] = {eid: (key, 0, 0) for eid, key, _ in seeds}
    # an entity named by more than max_mentions chunks is not followed (a hub's neighbours
    # are everything)
    frontier = [eid for eid, _, mentions in seeds if mentions <= max_mentions]
    for hop in range(1, max(hops, 0) + 1):
        if not frontier:
            break
        rows = conn.execute(
            _NEIGHBOURS, {"frontier": frontier, "max_neighbours": max_neighbours}
        ).fetchall()
        by_entity: dict[int, list[tuple[int, str, int, int]]] = {}
        for a, b, key, weight, mentions in rows:
            by_entity.setdefault(a, []).append((b, key, weight, mentions))
        arrived: dict[int, tuple[str, int, int]] = {}
        for neighbours in by_entity.values():
            neighbours.sort(key=lambda n: (-n[2], n[1]))
            for b, key, weight, mentions in neighbours[:max_neighbours]:
                if b in reached:
                    continue
                best = arrived.get(b)
                if best is None or weight > best[1]:
                    arrived[b] = (key, weight, mentions)
        for b, (key, weight, _) in arrived.items():
            reached[b] = (key, hop, weight)
        frontier = [b for b, (_, _, mentions) in arrived.items() if mentions <= max_mentions]
    if not reached:
        return Neighbourhood()
    counted = conn.execute(
        """SELECT entity_id, count(*),
                  CASE WHEN count(*) <= %s THEN array_agg(chunk_id ORDER BY chunk_id) END
           FROM graph_mentions WHERE entity_id = ANY(%s) GROUP BY entity_id""",
        (max_mentions, list(reached)),
    ).fetchall()
    mentioned = {row[0]: (row[1], tuple(row[2] or ())) for row in counted}
    entities = [
        ReachedEntity(
            key=key,
            hop=hop,
            mentions=mentioned.get(eid, (0, ()))[0],
            link=link,
            chunk_ids=mentioned.get(eid, (0, ()))[1],
        )
        for eid, (key, hop, link) in reached.items()
    ]
    entities.sort(key=lambda e: (e.hop, e.key))
    return Neighbourhood(tuple(entities))


def _entity(conn: psycopg.Connection, public_id: str, mention_limit: int) -> EntityDetail | None:
    row = conn.execute(
        f"SELECT e.id, {_SUMMARY} FROM graph_entities e WHERE e.public_id = %s", (public_id,)
    ).fetchone()
    if row is None:
        return None
    internal, summary = row[0], _summary(row[1:])
    mentions = conn.execute(
        """SELECT m.chunk_id, c.document_id FROM graph_mentions m
           JOIN chunks c ON c.id = m.chunk_id
           WHERE m.entity_id = %s ORDER BY m.chunk_id LIMIT %s""",
        (internal, mention_limit),
    ).fetchall()
    neighbours = conn.execute(
        f"""WITH pairs AS (
                SELECT target_id AS b, kind, chunk_id FROM graph_relations WHERE source_id = %(e)s
                UNION ALL
                SELECT source_id, kind, chunk_id FROM graph_relations WHERE target_id = %(e)s
            ),
            weighed AS (
                SELECT b, count(DISTINCT chunk_id) AS weight,
                       array_agg(DISTINCT kind ORDER BY kind) AS kinds
                FROM pairs GROUP BY b
            )
            SELECT w.weight, w.kinds, {_SUMMARY}
            FROM weighed w JOIN graph_entities e ON e.id = w.b
            ORDER BY w.weight DESC, e.key LIMIT %(limit)s""",
        {"e": internal, "limit": NEIGHBOURS_SHOWN},
    ).fetchall()
    return EntityDetail(
        entity=summary,
        mentions=tuple(Mention(chunk_id=m[0], document_id=m[1]) for m in mentions),
        neighbours=tuple(
            Neighbour(entity=_summary(n[2:]), weight=n[0], kinds=tuple(n[1])) for n in neighbours
        ),
    )
