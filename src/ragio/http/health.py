"""GET /health: open to all, says whether the service can answer; and how (the version,
the providers and their models) to a caller with the API key, or to all when no
SERVICE_API_KEY is set. The probes /health/live and /health/ready are open to all."""

from __future__ import annotations

from typing import Literal

from quart import Blueprint

from ragcore import __version__
from ragcore.api.operations import Reply, operation
from ragcore.api.service import (
    Database,
    Embedder,
    Graph,
    Health,
    HealthStatus,
    Probe,
    Provider,
    Providers,
    health_answer,
)
from ragio.http.access import holds_the_key
from ragio.http.context import service
from ragio.http.problems import Problem

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
@operation(Reply(200, "The service's state", health_answer), open=True)
async def health() -> Health | HealthStatus:
    """Health; with the API key also the version, database, mode, providers and graph"""
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
    if not holds_the_key():  # a stranger learns no version, provider or model name
        return HealthStatus(status)
    return Health(
        status,
        __version__,
        database,
        svc.mode,
        providers,
        Graph(graph.status, graph.store, graph.reason),
    )


@blueprint.get("/health/live")
@operation(Reply(200, "The process runs and answers", Probe), open=True)
async def live() -> Probe:
    """Liveness: answered by the process itself, whatever the database's state (restarting
    the process would not bring a database back)"""
    return Probe("alive")


@blueprint.get("/health/ready")
@operation(Reply(200, "Send this process requests", Probe), 503, open=True)
async def ready() -> Probe:
    """Readiness: 503 while the database does not answer, and from a stop signal on (the
    load balancer stops sending while the requests in progress finish)"""
    svc = service()
    if svc.stopping.is_set():
        raise Problem(503, "the service is shutting down")
    if not await svc.database.reachable():
        raise Problem(503, "the database does not answer")
    return Probe("ready")
