"""/documents: add documents to the knowledge base (as JSON text or an uploaded file),
list them, read one, delete one (its chunks go with it)."""

from __future__ import annotations

import functools
from typing import Any

import trio
from quart import Blueprint, request

from ragcore.api.converter import converter, refuse_unknown, structure_body
from ragcore.api.documents import (
    Document,
    DocumentAdded,
    Documents,
    DocumentUpload,
    DocumentWithText,
    NewDocument,
    check_json_media_type,
    check_size,
)
from ragcore.api.operations import Reply, operation
from ragcore.errors import InvalidInput
from ragcore.knowledge.documents import (
    NO_WORDS,
    StoredDocument,
    detect_format,
    prepare_document,
    store_new_document,
    supported_formats,
    upload_name,
)
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import Problem
from ragio.knowledge import store
from ragio.knowledge.formats import read_upload
from ragio.runner import run
from ragio.service import Service

blueprint = Blueprint("documents", __name__)
_MAX_ID = 2**63 - 1


DOCUMENT_ID = {"type": "integer", "minimum": 1}


@blueprint.post("/documents")
@operation(
    Reply(201, "Stored (Location: /documents/{id})", DocumentAdded),
    Reply(200, "Already stored (duplicate: true)", DocumentAdded),
    *(413, 415, 422, 502, 503),
    body=NewDocument,
    other_bodies=(("multipart/form-data", DocumentUpload),),
)
async def create_document() -> tuple[dict[str, Any], int, dict[str, str]]:
    """Add a document: JSON text, or an uploaded file

    The same content (after reading the file) is stored once: adding it again answers 200
    with duplicate: true."""
    svc = service()
    if request.mimetype == "multipart/form-data":
        stored = await _add_upload(svc)
    else:
        check_json_media_type(request.mimetype)
        check_size("body", request.content_length or 0, svc.settings.max_upload_bytes)
        new = structure_body(await json_body(required=True), NewDocument)
        stored = await _add(svc, new.name, new.text)
    result = converter.unstructure(DocumentAdded.of(stored, duplicate=not stored.created))
    if stored.created:
        return result, 201, {"Location": f"/documents/{stored.id}"}
    return result, 200, {}


async def _add_upload(svc: Service) -> StoredDocument:
    """A multipart upload: field ``file`` (the document) and, optionally, ``name``."""
    files = await request.files
    form = await request.form
    refuse_unknown(set(files) | set(form), DocumentUpload)
    uploads = files.getlist("file")
    if not uploads:
        detail = "must be a file part (with a filename)" if "file" in form else "is required"
        raise InvalidInput("file", f"{detail}: the document to add, as a multipart file part")
    if len(uploads) > 1:
        raise InvalidInput("file", "send one file per request")
    upload = uploads[0]
    filename = upload_name(upload.filename or "")
    name = form.get("name", "").strip() or filename
    if not name:
        raise InvalidInput("name", "is required: give the file a filename or send a name field")

    data = await trio.to_thread.run_sync(upload.read)
    check_size("file", len(data), svc.settings.max_upload_bytes)
    if not data:
        raise InvalidInput("file", "is empty")
    fmt = detect_format(filename or name, upload.mimetype, data[:1024]) or detect_format(name, None)
    if fmt is None:
        declared = upload.mimetype or "of no declared type"
        raise Problem(
            415, f"{name} is {declared}, which cannot be read; supported: {supported_formats()}"
        )
    charset = upload.mimetype_params.get("charset")
    text = await read_upload(data, fmt, charset, seconds=svc.settings.max_document_read_seconds)
    try:
        return await _add(
            svc, name, text, content_type=fmt.content_type, size_bytes=len(data), field="file"
        )
    except InvalidInput as error:
        if error.field == "text":
            # the text is the file's: say so of the file
            reason = "has no text to index" if error.message == NO_WORDS else error.message
            raise InvalidInput("file", reason) from None
        raise


async def _add(svc: Service, name: Any, text: Any, **source: Any) -> StoredDocument:
    """Check and chunk in a worker thread (CPU-bound for a large text), then store; at
    most MAX_DOCUMENT_CHUNKS chunks, so one request's embedding stays bounded."""
    limit = svc.settings.max_document_chunks
    prepare = functools.partial(prepare_document, name, text, max_chunks=limit, **source)
    return await run(store_new_document(await trio.to_thread.run_sync(prepare)), svc)


@blueprint.get("/documents")
@operation(Reply(200, "The documents", Documents))
async def list_documents() -> dict[str, Any]:
    """List the documents, oldest first"""
    documents = await service().database.run(store.list_documents)
    return converter.unstructure(Documents([Document.of(doc) for doc in documents]))


@blueprint.get("/documents/<id>")
@operation(Reply(200, "The document", DocumentWithText), 404, path={"id": DOCUMENT_ID})
async def get_document(id: str) -> dict[str, Any]:
    """One document, with its text"""
    found = await service().database.run(store.get_document, _document_id(id))
    if found is None:
        raise Problem(404, f"no document {id}; GET /documents lists them")
    doc, text = found
    return converter.unstructure(DocumentWithText.of(doc, text=text))


@blueprint.delete("/documents/<id>")
@operation(Reply(204, "Deleted"), 404, path={"id": DOCUMENT_ID})
async def delete_document(id: str) -> tuple[str, int]:
    """Delete a document and its chunks; answers cite it no more"""
    if not await service().database.run(store.delete_document, _document_id(id)):
        raise Problem(404, f"no document {id}; GET /documents lists them")
    return "", 204


def _document_id(raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or not 0 < int(raw) <= _MAX_ID:
        raise Problem(404, f"no document {raw!r}: document ids are positive whole numbers")
    return int(raw)
