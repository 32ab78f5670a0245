"""GET /openapi.json: the API as OpenAPI 3.1, made from each route's ``@operation`` and
the shapes in ``ragcore.api``; a route without one fails the contract test."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, current_app

from ragcore import __version__
from ragcore.api.operations import Reply, openapi_document, operation
from ragio.http.routes import openapi_path

blueprint = Blueprint("spec", __name__)
DOCUMENT = "ragchat.openapi"
INFO = {
    "title": "ragchat",
    "version": __version__,
    "description": "Retrieval-augmented chat over your own documents, with citations.",
}


def app_routes(app: Any) -> list[tuple[str, str, Any]]:
    """(path as /a/{b}, method, route function) for every route of ``app``."""
    return [
        (openapi_path(rule.rule), method, app.view_functions[rule.endpoint])
        for rule in app.url_map.iter_rules()
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"})
    ]


def _document(app: Any) -> dict[str, Any]:
    """Made on first request (every blueprint is registered by then), then kept."""
    if DOCUMENT not in app.extensions:
        app.extensions[DOCUMENT] = openapi_document(app_routes(app), INFO)
    return app.extensions[DOCUMENT]


@blueprint.get("/openapi.json")
@operation(Reply(200, "OpenAPI 3.1", dict))
async def openapi() -> dict[str, Any]:
    """This document"""
    return _document(current_app)
