"""The index of every route at the top of docs/api.md, made from the served
``/openapi.json`` (each route's ``@operation`` and docstring), so the list in the docs
cannot miss a route or name one that is gone. tests/io/test_docs_lists.py checks it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")


def render_routes(document: Mapping[str, Any]) -> str:
    """A markdown table: method, path and summary of every operation, by path, and the
    scopes of the API keys that open it (``open``: an operation with ``security: []``
    needs no key)."""
    rows = ["| Method | Path | What it does | Scopes¹ |", "|---|---|---|---|"]
    for path in sorted(document["paths"]):
        item = document["paths"][path]
        for method in (m for m in METHODS if m in item):
            operation = item[method]
            summary = str(operation.get("summary", "")).replace("|", "\\|")
            security = operation.get("security")
            scopes = ", ".join(security[0]["ApiKey"]) if security else "open"
            rows.append(f"| `{method.upper()}` | `{path}` | {summary} | {scopes} |")
    return "\n".join(rows) + "\n"
