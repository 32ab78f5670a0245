"""Which path is a route of its own.

Werkzeug matches a path against every route that takes the request's method: a path
that is a route of its own (``/live-actions/runs``, GET) asked with another method is
handed to a route with a variable part it also fits (``/live-actions/<id>``, PATCH),
which answers 404 for an id ``runs``; and a method no route takes gets 405 with the
methods of both in ``Allow``. A path written out as a route is the route it names,
whatever the method: ``ragio.http.app`` answers 405 with its methods alone, and
``ragio.http.metrics`` counts it under its own name.
"""

from __future__ import annotations

from collections.abc import Mapping

from werkzeug.routing import Map


def openapi_path(rule: str) -> str:
    """A route's rule as its OpenAPI path (``/documents/<id>``: ``/documents/{id}``)."""
    return rule.replace("<", "{").replace(">", "}")


def fixed_routes(url_map: Map) -> Mapping[str, frozenset[str]]:
    """Each route without a variable part, with the methods it takes (HEAD and OPTIONS
    included, as in a 405's ``Allow``)."""
    found: dict[str, set[str]] = {}
    for rule in url_map.iter_rules():
        if not rule.arguments:
            found.setdefault(rule.rule, set()).update(rule.methods or ())
    return {path: frozenset(methods) for path, methods in found.items()}
