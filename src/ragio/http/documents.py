"""/documents: add documents to the knowledge base and list them."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore.knowledge.documents import add_document
from ragio.http.context import service
from ragio.http.inputs import json_body, reject_unknown
from ragio.knowledge import store
from ragio.runner import run

blueprint = Blueprint("documents", __name__)


@blueprint.post("/documents")
async def create_document() -> tuple[dict[str, Any], int]:
    body = await json_body(required=True)
    reject_unknown(body, {"name", "text"})
    stored = await run(add_document(body.get("name"), body.get("text")), service())
    result = {
        "id": stored.id,
        "name": stored.name,
        "chunk_count": stored.chunk_count,
        "duplicate": not stored.created,
    }
    return result, 201 if stored.created else 200


@blueprint.get("/documents")
async def list_documents() -> dict[str, Any]:
    return {"documents": await service().database.run(store.list_documents)}
