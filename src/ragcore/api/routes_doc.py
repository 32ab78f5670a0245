"""The index of every route at the top of docs/api.md, made from the served
``/openapi.json`` (each route's ``@operation`` and docstring), so the list in the docs
cannot miss a route or name one that is gone. tests/io/test_docs_lists.py checks it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")


def render_routes(document: Mapping[str, Any]) -> str:
    """A markdown table: method, path and summary of every operation, by path, and
    whether it needs the API key (an operation with ``security: []`` is open)."""
    rows = ["| Method | Path | What it does | Key needed¹ |", "|---|---|---|---|"]
    for path in sorted(document["paths"]):
        item = document["paths"][path]
        for method in (m for m in METHODS if m in item):
            operation = item[method]
            summary = str(operation.get("summary", "")).replace("|", "\\|")
            key = "no" if operation.get("security") == [] else "yes"
            rows.append(f"| `{method.upper()}` | `{path}` | {summary} | {key} |")
    return "\n".join(rows) + "\n"
