"""GET /graph/entities and GET /graph/entities/{id}: what the knowledge graph extracted from
the documents, so the owner can see it (``ragcore.knowledge.graph``)."""

from __future__ import annotations

from typing import Annotated

import attrs

from ragcore.api.problems import ProblemError
from ragcore.knowledge.graph import EntitySummary
from ragcore.schema import described

MAX_ENTITIES_PAGE = 200
MAX_OFFSET = 1_000_000
#: how many of an entity's mentions GET /graph/entities/{id} shows
MENTIONS_SHOWN = 50
#: the characters of a mentioning chunk shown
EXCERPT_CHARS = 300


@attrs.frozen
class EntitiesQuery:
    q: Annotated[
        str,
        described(
            "only entities whose name contains this, in any case (% and _ are plain characters)",
            maxLength=200,
        ),
    ] = ""
    limit: Annotated[int, described("entities per page", minimum=1, maximum=MAX_ENTITIES_PAGE)] = 50
    offset: Annotated[
        int, described("entities to skip (next has the next page's)", minimum=0, maximum=MAX_OFFSET)
    ] = 0


@attrs.frozen
class GraphEntity:
    id: Annotated[str, described("stable across rebuilds: for GET /graph/entities/{id}")]
    name: Annotated[str, described("as the documents write it")]
    key: Annotated[str, described("the resolved name: case, spacing, plurals and aliases folded")]
    kind: Annotated[str, described("name, acronym, code, term, domain (DOMAIN_TERMS) …")]
    mentions: Annotated[int, described("chunks that mention it")]
    documents: Annotated[int, described("documents that mention it")]

    @classmethod
    def of(cls, entity: EntitySummary) -> GraphEntity:
        return cls(
            entity.id, entity.name, entity.key, entity.kind, entity.mentions, entity.documents
        )


@attrs.frozen
class GraphEntities:
    entities: list[GraphEntity]
    total: Annotated[int, described("how many entities match, on all pages")] = 0
    next: Annotated[str | None, described("the path of the next page; null on the last")] = None


@attrs.frozen
class EntityMention:
    chunk_id: int
    document_id: int
    document_name: str
    excerpt: Annotated[str, described(f"the chunk's first {EXCERPT_CHARS} characters")]


@attrs.frozen
class EntityNeighbour:
    entity: GraphEntity
    weight: Annotated[int, described("chunks that relate the two")]
    kinds: Annotated[list[str], described("co_occurs (named in one sentence), or a model's type")]


@attrs.frozen
class GraphEntityDetail:
    entity: GraphEntity
    mentions: Annotated[
        list[EntityMention], described(f"the first {MENTIONS_SHOWN} chunks that mention it")
    ]
    neighbours: Annotated[list[EntityNeighbour], described("strongest relation first")]


#: why the graph is off, for /health, the routes' 409 and the command line
GRAPH_OFF = "not turned on: GRAPH_ENABLED=true (or GRAPH_URI for Neo4j) turns it on"


def graph_off() -> ProblemError:
    return ProblemError(
        409,
        f"the knowledge graph is {GRAPH_OFF}, at the next start; docs/graph.md says when it helps",
    )


def graph_unavailable(reason: str) -> ProblemError:
    return ProblemError(503, f"the knowledge graph is unavailable: {reason}")
