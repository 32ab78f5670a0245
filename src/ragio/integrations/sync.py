"""Syncing a data source: claim it, read its records page by page through its connector,
store each page in its own transaction, and end the sync with its outcome.

The claim is one conditional UPDATE: a source already ``syncing`` is refused (409) unless
its sync has shown no progress for ``ragcore.integrations.records.stale_after`` (then it
was cut off by a crash or a stop, and the new sync takes over under a new run number; the
old one, should it wake, writes nothing more). Progress (records seen and stored) is on the
source after every page. A sync stops at INTEGRATIONS_SYNC_MAX_RECORDS (partial, nothing
removed); after a complete read the records not seen this time are removed. A failure is
stored as the source's reason (``SourceFailed.reason``), never a credential.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from ragcore.api.problems import ProblemError
from ragcore.integrations.kinds import KINDS, with_defaults
from ragcore.integrations.records import (
    Progress,
    cancelled_outcome,
    id_field,
    outcome,
    page_wait,
    prepare_page,
    stale_after,
    stopped_sync,
    within_bound,
)
from ragcore.jobs import JobStopped
from ragio.integrations import store
from ragio.integrations.connectors import connector_for
from ragio.integrations.connectors.base import Reach, Record, SourceFailed
from ragio.integrations.credentials import CredentialsUnreadable, Keys
from ragio.integrations.reach import http_reach
from ragio.jobs import store as jobs_store
from ragio.jobs.worker import Running
from ragio.service import Service

log = logging.getLogger(__name__)
STOPPED = "the sync was stopped (the service shut down); sync again"


@asynccontextmanager
async def reach(service: Service) -> AsyncIterator[Reach]:
    """How connectors may reach their sources (``ragio.integrations.reach``): an HTTP
    client of their own, with the setting's timeout on every request, no redirect
    followed, every connection judged by the address rules."""
    async with http_reach(service, service.settings.integrations_timeout_seconds) as within:
        yield within


def credentials_of(service: Service, source: store.Source) -> dict[str, str]:
    """The source's credentials, defaults filled in (CredentialsUnreadable if no key opens
    them)."""
    stored = Keys.of(service.settings).decrypt(source.token, source.name)
    return with_defaults(KINDS[source.source_type], stored)


class AlreadySyncing(ProblemError):
    """409: a sync of the source holds it (``ragchat sync`` skips it: not a failure)."""


async def claim(service: Service, source: store.Source) -> store.Source:
    """Mark ``source`` syncing under a new run; 409 naming it when a sync holds it, 404
    when it is gone."""
    now = service.clock.now()
    stale = now - stale_after(service.settings.integrations_timeout_seconds)
    claimed = await service.database.run(store.claim, source.id, now, stale)
    if claimed is not None:
        return claimed
    current = await service.database.run(store.get_source, source.id)
    if current is None:
        raise ProblemError(404, f"no data source {source.id}; GET /integrations lists them")
    started = current.sync.started_at.isoformat() if current.sync.started_at else "earlier"
    raise AlreadySyncing(
        409,
        f"data source {current.name!r} is already syncing (started {started}); "
        f"GET /integrations/{current.id} shows its progress",
    )


#: ``await stop_point(progress)`` before each page is stored: raises JobStopped when the
#: sync's job was cancelled (``Running.stop_point``)
StopPoint = Callable[[Progress], Awaitable[None]]


async def run_claimed(
    service: Service,
    source: store.Source,
    credentials: dict[str, str],
    stop_point: StopPoint | None = None,
) -> store.Source | None:
    """Run the sync ``source`` was claimed for, to its end; the source as it ended (None
    when a later sync took it over). When its job is cancelled, it stops before storing
    the next page: the source's sync ends partial (the pages stored stay, nothing is
    removed) and the JobStopped goes on to the job."""
    settings = service.settings
    bound = settings.integrations_sync_max_records
    id_name = id_field(source.source_type, credentials)
    progress = Progress()
    complete = True
    failure: str | None = None
    try:
        async with reach(service) as within, plain_errors() as nursery:
            connector = connector_for(source.source_type, credentials, within)
            # the next page is read while this one is stored
            receive = read_ahead(nursery, connector.pages())
            wait = page_wait(settings.integrations_timeout_seconds)
            try:
                while True:
                    page: list[Record] | Exception | None = None
                    with trio.move_on_after(wait) as waiting:
                        page = await receive.receive()
                    if waiting.cancelled_caught:
                        raise SourceFailed(f"the source sent no page within {wait:g} seconds")
                    if isinstance(page, Exception):
                        raise page
                    if page is None:
                        break
                    if stop_point is not None:
                        await stop_point(progress)
                    room = within_bound(progress, len(page), bound)
                    prepared = prepare_page(page[:room], source.user_field, id_name)
                    progress = Progress(
                        progress.seen + room,
                        progress.stored + len(prepared.rows),
                        progress.skipped + prepared.skipped,
                    )
                    stored = await service.database.run(
                        store.store_page,
                        source.id,
                        source.run,
                        prepared.rows,
                        progress,
                        service.clock.now(),
                    )
                    if stored is None:
                        log.warning("sync of data source %r was taken over", source.name)
                        return None
                    if room < len(page):
                        complete = False
                        break
            finally:
                nursery.cancel_scope.cancel()  # the reader, when the sync ends early
    except SourceFailed as error:
        failure = error.reason
    except JobStopped:
        await service.database.run(
            store.finish,
            source.id,
            source.run,
            cancelled_outcome(progress),
            service.clock.now(),
        )
        log.info("sync of data source %r cancelled: %d stored", source.name, progress.stored)
        raise
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            await _end(service, source, STOPPED)
        raise
    except Exception as error:  # noqa: BLE001 (stored as a reason; its text may hold a secret)
        log.error(
            "sync of data source %r failed unexpectedly: %s", source.name, type(error).__name__
        )
        failure = f"the sync failed unexpectedly ({type(error).__name__}); see the service log"
    ended = outcome(complete=complete, failure=failure, max_records=bound)
    finished = await service.database.run(
        store.finish, source.id, source.run, ended, service.clock.now()
    )
    log.info(
        "sync of data source %r: %s, %d seen, %d stored, %d skipped",
        source.name,
        ended.status,
        progress.seen,
        progress.stored,
        progress.skipped,
    )
    return finished


@asynccontextmanager
async def plain_errors() -> AsyncIterator[trio.Nursery]:
    """A nursery whose lone error (or whose cancellation) comes out as itself, not in an
    exception group, so the sync's handlers see a SourceFailed or a Cancelled as such."""
    try:
        async with trio.open_nursery() as nursery:
            yield nursery
    except BaseExceptionGroup as group:
        errors = group.exceptions
        if len(errors) == 1 or all(isinstance(e, trio.Cancelled) for e in errors):
            raise errors[0] from None
        raise


def read_ahead(
    nursery: trio.Nursery, pages: AsyncIterator[list[Record]]
) -> trio.MemoryReceiveChannel[list[Record] | Exception | None]:
    """Read ``pages`` in a task of ``nursery``, one page ahead of the reader: each page,
    then None at the end, or the exception that ended the reading (handed over, so the
    sync reports it as its own)."""
    send, receive = trio.open_memory_channel[list[Record] | Exception | None](0)

    async def reading() -> None:
        async with send:
            try:
                async for page in pages:
                    await send.send(page)
            except Exception as error:  # noqa: BLE001 (the sync reports it)
                await send.send(error)
                return
            finally:
                aclose = getattr(pages, "aclose", None)  # an async generator left early
                if aclose is not None:
                    with trio.CancelScope(shield=True):
                        await aclose()
            await send.send(None)

    nursery.start_soon(reading)
    return receive


async def _end(service: Service, source: store.Source, reason: str) -> None:
    try:
        ended = outcome(complete=False, failure=reason, max_records=0)
        await service.database.run(store.finish, source.id, source.run, ended, service.clock.now())
    except Exception:  # noqa: BLE001 (on the way out: the stale rule frees the source)
        log.warning("could not mark the stopped sync of %r as failed", source.name)


async def queue_sync(service: Service, source: store.Source) -> store.Source:
    """Claim ``source`` (409 when a sync holds it; 503 first when no key opens its
    credentials) and queue the job that syncs it."""
    credentials_of(service, source)
    claimed = await claim(service, source)
    payload = {"source": claimed.id, "run": claimed.run}
    await service.database.run(
        lambda conn: jobs_store.enqueue(
            conn, SYNC, payload, service.clock.now(), key=str(claimed.id)
        )
    )
    return claimed


async def queue_due_syncs(service: Service) -> None:
    """The sources whose ``sync_interval_minutes`` has passed, queued as sync jobs: by
    whichever process that runs jobs looks first (the claim lets one of them)."""
    for source in await service.database.run(store.due_sources, service.clock.now()):
        try:
            await queue_sync(service, source)
        except CredentialsUnreadable:
            log.warning("data source %r: no key opens its credentials; not synced", source.name)
            continue
        except ProblemError:  # another process claimed it first, or it was deleted
            continue
        log.info(
            "data source %r: sync queued (every %d minutes)",
            source.name,
            source.sync_interval_minutes,
        )


#: the kind of job that runs a sync claimed by ``POST /integrations/{id}/sync``
SYNC = "sync"


async def sync_job(running: Running) -> dict[str, Any]:
    """A sync, as a job: the run it was claimed for, or, on a retry, a new claim. A sync
    that failed fails the attempt (503: the job is retried after its backoff)."""
    svc, job = running.service, running.job
    source = await svc.database.run(store.get_source, job.payload["source"])
    if source is None:
        return {"skipped": "the data source was deleted"}
    held = source.sync.status == "syncing" and source.run == job.payload["run"]
    if not held:
        if job.attempts == 1:
            return {"skipped": "another sync took the data source over"}
        source = await claim(svc, source)

    async def stop_point(progress: Progress) -> None:
        await running.stop_point(stopped_sync(progress))

    ended = await run_claimed(svc, source, credentials_of(svc, source), stop_point)
    if ended is None:
        return {"skipped": "another sync took the data source over"}
    if ended.sync.status == "failed":
        raise ProblemError(503, f"the sync of {ended.name!r} failed: {ended.sync.error}")
    return {"status": ended.sync.status, "records_stored": ended.sync.records_stored}


async def sync_now(service: Service, source: store.Source) -> store.Source | None:
    """Claim ``source`` and sync it in the foreground (``ragchat sync``)."""
    credentials = credentials_of(service, source)
    claimed = await claim(service, source)
    return await run_claimed(service, claimed, credentials)


async def test_source(service: Service, source: store.Source) -> tuple[bool, str]:
    """The source's smallest real request: (True, what answered) or (False, its reason)."""
    credentials = credentials_of(service, source)
    limit = 3 * service.settings.integrations_timeout_seconds
    try:
        async with reach(service) as within:
            connector = connector_for(source.source_type, credentials, within)
            with trio.move_on_after(limit):
                return True, await connector.test()
            return False, f"no answer within {limit:g} seconds"
    except SourceFailed as error:
        return False, error.reason
    except Exception as error:  # noqa: BLE001 (reported; its text may hold a secret)
        log.error("test of data source %r failed: %s", source.name, type(error).__name__)
        return False, f"the test failed unexpectedly ({type(error).__name__})"
