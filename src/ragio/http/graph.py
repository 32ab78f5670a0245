"""GET /graph/entities and GET /graph/entities/{id}: the knowledge graph as extracted; and,
when the app starts, the graph brought level with the documents in the background (what
was stored while it was off or down)."""

from __future__ import annotations

import trio
from quart import Blueprint, current_app, request

from ragcore.api.documents import next_page
from ragcore.api.graph import (
    EXCERPT_CHARS,
    MENTIONS_SHOWN,
    EntitiesQuery,
    EntityMention,
    EntityNeighbour,
    GraphEntities,
    GraphEntity,
    GraphEntityDetail,
    graph_off,
    graph_unavailable,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.queries import no_such, read_query
from ragcore.knowledge.graph import NEIGHBOURS_SHOWN
from ragio.graph.service import Graph
from ragio.graph.store import GraphUnavailable
from ragio.http.context import service
from ragio.knowledge import store

blueprint = Blueprint("graph", __name__)
PATH = "/graph/entities"
ENTITY_ID = {"path": {"id": {"type": "string", "pattern": "^[0-9a-f]{16}$"}}}


LEVELLING = "ragchat.graph.levelling"


@blueprint.before_app_serving
async def keep_graph_level() -> None:
    """The graph kept level with the documents beside the app (``Graph.keep_level``)."""
    graph = service().graph
    if not graph.on:
        return
    scope = trio.CancelScope()
    current_app.extensions[LEVELLING] = scope

    async def levelling() -> None:
        with scope:
            await graph.keep_level()

    current_app.nursery.start_soon(levelling)  # type: ignore[attr-defined]


@blueprint.after_app_serving
async def stop_levelling() -> None:
    scope: trio.CancelScope | None = current_app.extensions.get(LEVELLING)
    if scope is not None:  # it would hold the app's nursery open
        scope.cancel()


def _graph() -> Graph:
    graph = service().graph
    if not graph.on:
        raise graph_off()
    return graph


@blueprint.get(PATH)
@operation(
    Reply(200, "The entities, most mentioned first", GraphEntities),
    409,
    422,
    503,
    query=EntitiesQuery,
)
async def list_entities() -> GraphEntities:
    """The entities the knowledge graph extracted from the documents

    Find them by name with ?q=; page with ?limit= and ?offset=. 409 when the graph is
    off, 503 when its store cannot be reached."""
    query = read_query(EntitiesQuery, request.args)
    graph = _graph()
    try:
        found, total = await graph.find_entities(query.q, query.limit, query.offset)
    except GraphUnavailable as error:
        raise graph_unavailable(str(error)) from None
    return GraphEntities(
        [GraphEntity.of(e) for e in found], total, next_page(query, len(found), total, PATH)
    )


@blueprint.get(f"{PATH}/<id>")
@operation(
    Reply(200, "The entity, the chunks that mention it and its neighbours", GraphEntityDetail),
    404,
    409,
    503,
    **ENTITY_ID,
)
async def get_entity(id: str) -> GraphEntityDetail:
    """One entity: the chunks that mention it and the entities related to it"""
    graph = _graph()
    try:
        found = await graph.entity(id, MENTIONS_SHOWN)
    except GraphUnavailable as error:
        raise graph_unavailable(str(error)) from None
    if found is None:
        raise no_such(id, "entity", PATH)
    excerpts = await service().database.run(
        store.chunk_excerpts, [m.chunk_id for m in found.mentions], EXCERPT_CHARS
    )
    mentions = [
        EntityMention(m.chunk_id, m.document_id, *excerpts[m.chunk_id])
        for m in found.mentions
        if m.chunk_id in excerpts  # a chunk deleted since the store last levelled
    ]
    neighbours = [
        EntityNeighbour(GraphEntity.of(n.entity), n.weight, list(n.kinds))
        for n in found.neighbours[:NEIGHBOURS_SHOWN]
    ]
    return GraphEntityDetail(GraphEntity.of(found.entity), mentions, neighbours)
