"""GET /health: open to all, says whether the service can answer and how."""

from __future__ import annotations

from typing import Literal

from quart import Blueprint

from ragcore import __version__
from ragcore.api.operations import Reply, operation
from ragcore.api.service import Database, Embedder, Graph, Health, Provider, Providers
from ragio.http.context import service

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
@operation(Reply(200, "The service's state", Health), open=True)
async def health() -> Health:
    """Health, version, database, mode, active providers and the knowledge graph"""
    svc = service()
    reachable = await svc.database.reachable()
    space = svc.embedder.space
    providers = Providers(
        llm=Provider(svc.answerer.name, svc.answerer.model),
        llm_fallbacks=[answerer.name for answerer in list(svc.answerer)[1:]],
        embedding=Embedder(svc.embedder.name, space.model, space.dimensions),
    )
    database = Database(reachable, svc.database.embedded)
    graph = svc.graph.status()
    healthy = reachable and graph.status != "degraded"
    status: Literal["ok", "degraded"] = "ok" if healthy else "degraded"
    return Health(
        status,
        __version__,
        database,
        svc.mode,
        providers,
        Graph(graph.status, graph.store, graph.reason),
    )
