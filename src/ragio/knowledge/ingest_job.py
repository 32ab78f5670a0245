"""The ingestion of a large upload, as a job (``ragcore.knowledge.jobs.INGEST``) that any
process running jobs may take: the file is read from the database, chunked (without
MAX_DOCUMENT_CHUNKS: nobody waits on a request), embedded a batch at a time (each batch
counted as the job's progress) and stored; the job's result is what a small upload
answers. Before each batch and before storing, the job stops if the owner cancelled it
(``Running.stop_point``): the document is then not stored at all."""

from __future__ import annotations

import functools
from typing import Any

import attrs
import trio

from ragcore.api.documents import DocumentAdded, said_of_the_file
from ragcore.converter import converter
from ragcore.knowledge.documents import (
    FORMAT_NAMED,
    StoreDocuments,
    prepare_document,
    store_new_document,
)
from ragcore.knowledge.effects import Embed, Vector
from ragcore.knowledge.formats import document_languages
from ragcore.knowledge.jobs import stopped_ingestion
from ragio.jobs.worker import Running
from ragio.knowledge.formats import read_upload
from ragio.runner import run
from ragio.service import Handlers, Service


async def ingest(running: Running) -> dict[str, Any]:
    svc, job = running.service, running.job
    data = await running.file()
    fmt = FORMAT_NAMED[job.payload["format"]]
    seconds = svc.settings.max_document_read_seconds
    languages = document_languages(svc.settings)
    charset = job.payload.get("charset")
    text = await read_upload(data, fmt, charset, seconds=seconds, languages=languages)
    prepare = functools.partial(
        prepare_document,
        job.payload["name"],
        text,
        content_type=fmt.content_type,
        size_bytes=len(data),
        field="file",
        source_url=job.payload.get("source_url"),
    )
    with said_of_the_file():
        doc = await trio.to_thread.run_sync(prepare)
    await running.total(len(doc.chunks))
    replace = job.payload.get("replace", False)  # a job queued before the flag: False
    pipeline = store_new_document(doc, replace=replace)
    stored = await run(pipeline, _counting(running, len(doc.chunks)))
    result: dict[str, Any] = converter.unstructure(DocumentAdded.added(stored))
    return result


def _counting(running: Running, total: int) -> Service:
    """The service, its embedding handler counting each batch as the job's progress, and
    a stop point before each batch and before the document is stored."""
    svc = running.service
    embed = svc.handlers.plain[Embed]
    store_documents = svc.handlers.plain[StoreDocuments]
    embedded = 0

    async def counted(effect: Embed, service: Service) -> list[Vector]:
        nonlocal embedded
        await running.stop_point(stopped_ingestion(embedded, total))
        vectors: list[Vector] = await embed(effect, service)
        embedded += len(effect.texts)
        await running.advance(len(effect.texts))
        return vectors

    async def stored(effect: StoreDocuments, service: Service) -> Any:
        await running.stop_point(stopped_ingestion(embedded, total))
        return await store_documents(effect, service)

    plain: dict[Any, Any] = {**svc.handlers.plain, Embed: counted, StoreDocuments: stored}
    return attrs.evolve(svc, handlers=Handlers(plain, svc.handlers.streaming))
