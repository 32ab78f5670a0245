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
from ragio.service import Service

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
@operation(Reply(200, "The service's state", health_answer), open=True)
async def health() -> Health | HealthStatus:
    """Health; with the API key also the version, database, mode, providers and graph"""
    svc = service()
    reachable = await svc.database.reachable()
    primary, *fallbacks = answering_chain(svc)
    providers = Providers(
        llm=primary,
        llm_fallbacks=[fallback.name for fallback in fallbacks],
        embedding=embedder(svc),
    )
    database = Database(reachable, svc.database.embedded)
    shown = graph(svc)
    healthy = reachable and shown.status != "degraded"
    status: Literal["ok", "degraded"] = "ok" if healthy else "degraded"
    if not holds_the_key():  # a stranger learns no version, provider or model name
        return HealthStatus(status)
    return Health(
        status,
        __version__,
        database,
        svc.mode,
        providers,
        shown,
    )


def answering_chain(svc: Service) -> list[Provider]:
    """The answering providers the service runs, in the order they are tried, with their
    models (also for GET /status)."""
    return [Provider(answerer.name, answerer.model) for answerer in svc.answerer]


def graph(svc: Service) -> Graph:
    """The knowledge graph's state (``ragio.graph.service``)."""
    state = svc.graph.status()
    return Graph(state.status, state.store, state.reason)


def embedder(svc: Service) -> Embedder:
    """The embedder the service runs, with its model and dimensions."""
    space = svc.embedder.space
    return Embedder(svc.embedder.name, space.model, space.dimensions)


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
