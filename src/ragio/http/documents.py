"""/documents: add documents to the knowledge base (as JSON text or an uploaded file; a
large file as a background job, /documents/jobs/{id}), list them, read one, delete one
(its chunks go with it), rename one."""

from __future__ import annotations

import functools
from typing import Any

import trio
from quart import Blueprint, request

from ragcore.api.documents import (
    Document,
    DocumentAdded,
    DocumentChange,
    DocumentJob,
    Documents,
    DocumentsQuery,
    DocumentUpload,
    DocumentWithText,
    NewDocument,
    check_json_media_type,
    check_size,
    form_flag,
    next_page,
    said_of_the_file,
    upload_format,
    upload_names,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import Problem, ProblemError
from ragcore.api.queries import contains_pattern, no_such, path_id, read_query, stored_id
from ragcore.converter import converter, refuse_unknown, structure_body
from ragcore.knowledge.documents import (
    StoredDocument,
    check_source_url,
    forget_documents,
    prepare_document,
    store_new_document,
)
from ragcore.knowledge.formats import document_languages
from ragcore.knowledge.jobs import INGEST, ingested_as_job
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.jobs import poke_worker
from ragio.jobs import store as jobs_store
from ragio.knowledge import store
from ragio.knowledge.formats import read_upload
from ragio.runner import run
from ragio.service import Service

blueprint = Blueprint("documents", __name__)
DOCUMENT_ID = {"type": "integer", "minimum": 1}
DOCUMENTS = ("document", "/documents")  # what a path id names, and where they are listed


@blueprint.post("/documents")
@operation(
    Reply(
        201,
        "Stored (Location: /documents/{id}); with replace, replaced: the older version",
        DocumentAdded,
    ),
    Reply(200, "Already stored (duplicate: true)", DocumentAdded),
    Reply(
        202,
        "A file larger than INGEST_JOB_BYTES: ingested as a background job "
        "(Location: /documents/jobs/{id})",
        DocumentJob,
    ),
    *(409, 413, 415, 422, 502, 503),
    body=NewDocument,
    other_bodies=(("multipart/form-data", DocumentUpload),),
)
async def create_document() -> tuple[DocumentAdded | DocumentJob, int, dict[str, str]]:
    """Add a document: JSON text, or an uploaded file

    The same content (after reading the file) is stored once: adding it again answers 200
    with duplicate: true. A name held by a document of other content is refused (409,
    existing_id: that document) unless replace is true: then that document is replaced,
    its chunks leaving as the new ones are stored (replaced: the old one); PATCH
    /documents/{id} renames a document instead. A file larger than INGEST_JOB_BYTES is
    ingested in the background: 202 with the job to poll (its problem is that 409 then)."""
    svc = service()
    if request.mimetype == "multipart/form-data":
        uploaded = await _add_upload(svc)
        if isinstance(uploaded, jobs_store.Job):
            return shown_job(uploaded), 202, {"Location": f"/documents/jobs/{uploaded.id}"}
        stored = uploaded
    else:
        check_json_media_type(request.mimetype)
        check_size("body", request.content_length or 0, svc.settings.max_upload_bytes)
        new = structure_body(await json_body(required=True), NewDocument)
        stored = await _add(svc, new.name, new.text, replace=new.replace, source_url=new.source_url)
    added = DocumentAdded.added(stored)
    if stored.created:
        return added, 201, {"Location": f"/documents/{stored.id}"}
    return added, 200, {}


async def _add_upload(svc: Service) -> StoredDocument | jobs_store.Job:
    """A multipart upload: field ``file`` (the document) and, optionally, ``name``; the
    job it became when the file is larger than INGEST_JOB_BYTES."""
    files, form = await request.files, await request.form
    refuse_unknown(set(files) | set(form), DocumentUpload)
    uploads = files.getlist("file")
    first = uploads[0].filename if uploads else None
    name, filename = upload_names(len(uploads), "file" in form, first, form.get("name", ""))
    replace = form_flag(form.get("replace", "false"), "replace")
    source_url = check_source_url(form.get("source_url"))
    upload = uploads[0]
    data = await trio.to_thread.run_sync(upload.read)
    fmt = upload_format(name, filename, upload.mimetype, data, svc.settings.max_upload_bytes)
    charset = upload.mimetype_params.get("charset")
    if ingested_as_job(len(data), svc.settings.ingest_job_bytes):
        return await _queue_ingestion(
            svc, name, fmt.name, charset, data, replace=replace, source_url=source_url
        )
    text = await read_upload(
        data,
        fmt,
        charset,
        seconds=svc.settings.max_document_read_seconds,
        languages=document_languages(svc.settings),
    )
    with said_of_the_file():
        return await _add(
            svc,
            name,
            text,
            replace=replace,
            source_url=source_url,
            content_type=fmt.content_type,
            size_bytes=len(data),
            field="file",
        )


async def _queue_ingestion(
    svc: Service,
    name: str,
    fmt: str,
    charset: str | None,
    data: bytes,
    *,
    replace: bool,
    source_url: str | None,
) -> jobs_store.Job:
    """The file kept in the database with its job, for whichever process runs it."""
    payload = {
        "name": name,
        "format": fmt,
        "charset": charset,
        "size_bytes": len(data),
        "replace": replace,
        "source_url": source_url,
    }
    job, _ = await svc.database.run(
        lambda conn: jobs_store.enqueue(conn, INGEST, payload, svc.clock.now(), data=data)
    )
    poke_worker()
    return job


async def _add(
    svc: Service, name: Any, text: Any, *, replace: bool, **source: Any
) -> StoredDocument:
    """Check and chunk in a worker thread (CPU-bound for a large text), then store; at
    most MAX_DOCUMENT_CHUNKS chunks, so one request's embedding stays bounded."""
    limit = svc.settings.max_document_chunks
    prepare = functools.partial(prepare_document, name, text, max_chunks=limit, **source)
    doc = await trio.to_thread.run_sync(prepare)
    return await run(store_new_document(doc, replace=replace), svc)


@blueprint.get("/documents")
@operation(Reply(200, "A page of the documents", Documents), 422, query=DocumentsQuery)
async def list_documents() -> Documents:
    """List the documents a page at a time, oldest (or newest) first; q= finds them by name

    order=newest lists the last added first. total counts the matching documents on all
    pages; next is the next page's path, with q and order."""
    query = read_query(DocumentsQuery, request.args)
    newest = query.order == "newest"
    documents, total = await service().database.run(
        store.list_documents, query.limit, query.offset, contains_pattern(query.q), newest
    )
    carried = {"order": query.order} if newest else None  # the default goes without saying
    shown = [Document.of(doc) for doc in documents]
    return Documents(shown, total, next_page(query, len(documents), total, carried=carried))


@blueprint.get("/documents/jobs/<id>")
@operation(Reply(200, "The job", DocumentJob), 404, path={"id": DOCUMENT_ID})
async def get_job(id: str) -> DocumentJob:  # noqa: A002 (the path's name)
    """A background upload's job: status, progress, then the document or the problem"""
    job_id = stored_id(id)
    job = None
    if job_id is not None:
        job = await service().database.run(jobs_store.get_job, job_id, INGEST)
    if job is None:
        raise ProblemError(
            404,
            f"no document job {id[:40]!r}; a job is made by uploading a file larger than "
            "INGEST_JOB_BYTES (its Location header names it)",
        )
    return shown_job(job)


def shown_job(job: jobs_store.Job) -> DocumentJob:
    """The job as a document's upload: a retried one shows its last failure at GET /jobs/{id}."""
    document = None
    if job.status == "done" and job.result is not None:  # a cancelled one's says what it did
        document = converter.structure(job.result, DocumentAdded)
    problem = None
    if job.status == "failed" and job.problem is not None:
        problem = converter.structure(job.problem, Problem)
    return DocumentJob(
        job.id,
        job.status,  # type: ignore[arg-type]
        job.payload["name"],
        job.payload["size_bytes"],
        job.progress_done,
        job.progress_total,
        document,
        problem,
        job.created_at,
        job.started_at,
        job.finished_at,
    )


@blueprint.get("/documents/<id>")
@operation(Reply(200, "The document", DocumentWithText), 404, path={"id": DOCUMENT_ID})
async def get_document(id: str) -> DocumentWithText:
    """One document, with its text"""
    found = await service().database.run(store.get_document, path_id(id, *DOCUMENTS))
    if found is None:
        raise no_such(id, *DOCUMENTS)
    doc, text = found
    return DocumentWithText.of(doc, text=text)


@blueprint.patch("/documents/<id>")
@operation(
    Reply(200, "Changed", Document), 404, 409, 422, body=DocumentChange, path={"id": DOCUMENT_ID}
)
async def change_document(id: str) -> Document:  # noqa: A002 (the path's name)
    """Rename a document or say where it is published; a name another holds is refused (409)"""
    document_id = path_id(id, *DOCUMENTS)
    change = structure_body(await json_body(required=True), DocumentChange)
    changed = await service().database.run(
        store.change_document, document_id, change.name, change.source_url
    )
    if changed is None:
        raise no_such(id, *DOCUMENTS)
    return Document.of(changed)


@blueprint.delete("/documents/<id>")
@operation(Reply(204, "Deleted"), 404, path={"id": DOCUMENT_ID})
async def delete_document(id: str) -> tuple[str, int]:
    """Delete a document and its chunks; answers cite it no more"""
    if not await run(forget_documents(path_id(id, *DOCUMENTS)), service()):
        raise no_such(id, *DOCUMENTS)
    return "", 204
