"""Uploads larger than INGEST_JOB_BYTES, ingested in the background of the app (its
nursery) instead of in a request held open for minutes.

The file waits under DATA_DIR/uploads/<job id> until it is read, and is removed when the
job ends either way. One job runs at a time in a process (the others wait, ``queued``); its
progress is the chunks embedded of the chunks the document makes. A job ends ``done``,
with the response a small upload gets, or ``failed``, with the problem it would have
answered. The process touches the heartbeat of the jobs it holds every
HEARTBEAT_SECONDS; at start, and when a job is read, one left unfinished by a stopped
process is marked failed with the reason (``ragcore.knowledge.jobs``).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

import attrs
import trio

from ragcore.api.converter import converter
from ragcore.api.documents import DocumentAdded, said_of_the_file
from ragcore.api.problems import ProblemError
from ragcore.knowledge.documents import (
    FORMAT_NAMED,
    Format,
    StoredDocument,
    prepare_document,
    store_new_document,
)
from ragcore.knowledge.effects import Embed, Vector
from ragcore.knowledge.jobs import HEARTBEAT_SECONDS, STOPPED
from ragcore.settings import Settings
from ragio.http.problems import problem_for
from ragio.knowledge import job_store
from ragio.knowledge.formats import read_upload
from ragio.runner import run
from ragio.service import Handlers, Service

log = logging.getLogger(__name__)
EXTENSION = "ragchat.document_jobs"


def uploads_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "uploads"


@attrs.define
class Jobs:
    """The document jobs of this process: started in ``nursery`` (the app's), one at a time."""

    service: Service
    nursery: trio.Nursery
    limiter: trio.CapacityLimiter = attrs.Factory(lambda: trio.CapacityLimiter(1))
    held: set[int] = attrs.Factory(set)  # the unfinished jobs this process runs
    beating: trio.CancelScope = attrs.Factory(trio.CancelScope)  # the heartbeat's

    async def start(self) -> None:
        """Fail the jobs a stopped process left (all unfinished ones on the embedded
        database, which no other process serves), remove their files, and keep the
        heartbeat of this process's jobs."""
        svc = self.service
        failed = await svc.database.run(
            job_store.fail_abandoned, svc.clock.now(), svc.database.embedded
        )
        if failed:
            log.warning("document jobs left unfinished by a stopped process: %s failed", failed)
        unfinished = await svc.database.run(job_store.unfinished_ids)
        await trio.to_thread.run_sync(_remove_files_but, uploads_dir(svc.settings), unfinished)
        self.nursery.start_soon(self._heartbeat)

    def stop(self) -> None:
        """The app is stopping: the heartbeat ends at once (it would hold the app's nursery
        open); a running job has the app's grace period to finish, then fails as stopped."""
        self.beating.cancel()

    async def _heartbeat(self) -> None:
        with self.beating:
            while True:
                await trio.sleep(HEARTBEAT_SECONDS)
                if self.held:
                    try:
                        await self.service.database.run(
                            job_store.touch, sorted(self.held), self.service.clock.now()
                        )
                    except Exception:  # noqa: BLE001 (the next beat tries again)
                        log.warning("could not touch the heartbeat of document jobs %s", self.held)

    async def submit(
        self, name: str, fmt: Format, charset: str | None, data: bytes
    ) -> job_store.StoredJob:
        """Keep the file under DATA_DIR and queue its job; the job as queued."""
        svc = self.service
        job = await svc.database.run(
            job_store.create_job, name, fmt.name, charset, len(data), svc.clock.now()
        )
        path = uploads_dir(svc.settings) / str(job.id)
        try:
            await trio.to_thread.run_sync(_write, path, data)
        except OSError as error:
            problem = ProblemError(
                507,
                f"the upload could not be kept under DATA_DIR until it is ingested "
                f"({error.strerror}); nothing was stored",
            )
            await svc.database.run(job_store.fail_job, job.id, problem.body(), svc.clock.now())
            raise problem from None
        self.held.add(job.id)
        self.nursery.start_soon(self._run, job, path)
        return job

    async def _run(self, job: job_store.StoredJob, path: Path) -> None:
        """Run the job to its end; the file is removed before the end is recorded, so a
        client that sees the job ended finds nothing of it left under DATA_DIR."""
        svc = self.service
        try:
            async with self.limiter:
                if not await svc.database.run(job_store.start_job, job.id, svc.clock.now()):
                    return
                stored = await self._ingest(job, path)
                result = converter.unstructure(DocumentAdded.added(stored))
                await _remove(path)
                await svc.database.run(
                    job_store.finish_job, job.id, stored.id, result, svc.clock.now()
                )
                log.info("document job %d done: document %d, %s", job.id, stored.id, job.name)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await _remove(path)
                await self._fail(job, ProblemError(503, STOPPED))
            raise
        except Exception as error:  # noqa: BLE001 (the job fails with the problem)
            problem = problem_for(error)
            if problem.status >= 500:
                log.warning("document job %d failed: %s", job.id, type(error).__name__)
            await _remove(path)
            await self._fail(job, problem)
        finally:
            self.held.discard(job.id)
            with trio.CancelScope(shield=True):
                await _remove(path)  # when the job was not run at all

    async def _fail(self, job: job_store.StoredJob, problem: ProblemError) -> None:
        try:
            await self.service.database.run(
                job_store.fail_job, job.id, problem.body(), self.service.clock.now()
            )
        except Exception:  # noqa: BLE001 (the heartbeat stops: it will be taken for gone)
            log.warning("could not mark document job %d failed", job.id)

    async def _ingest(self, job: job_store.StoredJob, path: Path) -> StoredDocument:
        """Read, chunk (no MAX_DOCUMENT_CHUNKS: nobody waits on a request), embed, store."""
        svc = self.service
        data = await trio.to_thread.run_sync(path.read_bytes)
        fmt = FORMAT_NAMED[job.format]
        seconds = svc.settings.max_document_read_seconds
        text = await read_upload(data, fmt, job.charset, seconds=seconds)
        prepare = functools.partial(
            prepare_document,
            job.name,
            text,
            content_type=fmt.content_type,
            size_bytes=len(data),
            field="file",
        )
        with said_of_the_file():
            doc = await trio.to_thread.run_sync(prepare)
        await svc.database.run(job_store.set_total, job.id, len(doc.chunks), svc.clock.now())
        return await run(store_new_document(doc), self._counting(job.id))

    def _counting(self, job_id: int) -> Service:
        """The service, its embedding handler counting each batch as the job's progress."""
        svc = self.service
        embed = svc.handlers.plain[Embed]

        async def counted(effect: Embed, service: Service) -> list[Vector]:
            vectors: list[Vector] = await embed(effect, service)
            await svc.database.run(
                job_store.add_progress, job_id, len(effect.texts), svc.clock.now()
            )
            return vectors

        plain: dict[Any, Any] = {**svc.handlers.plain, Embed: counted}
        return attrs.evolve(svc, handlers=Handlers(plain, svc.handlers.streaming))


async def _remove(path: Path) -> None:
    """Remove a job's file; a failure is logged (the next start removes what is left)."""
    try:
        await trio.to_thread.run_sync(functools.partial(path.unlink, missing_ok=True))
    except OSError as error:
        log.warning("could not remove %s: %s", path, error.strerror)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _remove_files_but(folder: Path, keep: set[int]) -> None:
    """Remove the files of the jobs that ended (or never were) from ``folder``."""
    if not folder.is_dir():
        return
    for file in folder.iterdir():
        if not (file.name.isdigit() and int(file.name) in keep):
            file.unlink(missing_ok=True)
