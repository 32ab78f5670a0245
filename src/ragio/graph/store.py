"""The one small interface both graph stores implement: PostgreSQL tables in the service's
database (``ragio.graph.postgres``) and Neo4j through the official driver
(``ragio.graph.neo4j``).

Methods are synchronous and called in a worker thread (``trio.to_thread``): psycopg's pool
and Neo4j's sync driver are both blocking. Every failure to reach or use the store is
raised as ``GraphUnavailable`` with a reason fit for ``/health`` and the log (never a
secret); the caller degrades (``ragio.graph.handlers``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragcore.knowledge.graph import (
    DocumentGraph,
    EntityDetail,
    EntitySummary,
    GraphCounts,
    Neighbourhood,
)


class GraphUnavailable(Exception):
    """The graph store cannot be reached or used; ``str()`` says why, without secrets."""


class GraphStore(Protocol):
    #: "postgres" or "neo4j", for /health and the log
    kind: str

    def prepare(self) -> None:
        """Check the connection and create what the store needs (tables exist by
        migration; Neo4j's constraints and indexes are created here, idempotently)."""

    def record(self, documents: Sequence[DocumentGraph]) -> None:
        """Record what each document contributes, replacing what it contributed before;
        batched writes, all documents in one transaction."""

    def forget(self, document_ids: Sequence[int]) -> None:
        """Remove what these documents contributed, and entities left with no mention."""

    def clear(self) -> None:
        """Remove everything (before a rebuild)."""

    def reach(
        self, keys: Sequence[str], hops: int, max_neighbours: int, max_mentions: int
    ) -> Neighbourhood:
        """The rule in ``ragcore.knowledge.graph`` (reach), exactly."""

    def find_entities(self, query: str, limit: int, offset: int) -> tuple[list[EntitySummary], int]:
        """Entities whose name or key contains ``query`` (case-insensitive, taken
        literally; empty: all), most mentioned first, then by key; and how many match."""

    def entity(self, entity_id: str, mention_limit: int) -> EntityDetail | None:
        """One entity by id (``ragcore.knowledge.graph.entity_id``), None when unknown."""

    def counts(self) -> GraphCounts: ...

    def close(self) -> None: ...
