"""GET /health: open to all, says whether the service can answer and how."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore import __version__
from ragio.http.context import service

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
async def health() -> dict[str, Any]:
    svc = service()
    reachable = await svc.database.reachable()
    return {
        "status": "ok" if reachable else "degraded",
        "version": __version__,
        "database": {"reachable": reachable, "embedded": svc.database.embedded},
        "mode": svc.mode,
        "providers": {
            "llm": {"name": svc.answerer.name, "model": svc.answerer.model},
            "llm_fallbacks": [a.name for a in list(svc.answerer)[1:]],
            "embedding": {
                "name": svc.embedder.name,
                "model": svc.embedder.space.model,
                "dimensions": svc.embedder.space.dimensions,
            },
        },
    }
