"""Running jobs: claim the due ones, run each with its kind's handler, keep their
heartbeat, and end each done, retried or failed (``ragcore.jobs``).

Any number of processes run this loop on one database (``ragchat serve`` with RUN_JOBS,
``ragchat worker``); ``FOR UPDATE SKIP LOCKED`` gives each due job to one of them. Each
pass also queues again the running jobs of a process that went quiet, so a crash leaves
nothing stuck. When the service stops (``Service.stopping``) no job is claimed any more;
a running job has the rest of SHUTDOWN_GRACE_SECONDS to end, then it is handed back,
queued for the next process. A job the owner cancelled while it runs (``DELETE
/jobs/{id}``, on any process) stops at its handler's next ``Running.stop_point``, between
two batches, and ends cancelled with what it had done.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import psycopg
import trio

from ragcore.api.problems import ProblemError
from ragcore.jobs import HEARTBEAT_SECONDS, POLL_SECONDS, JobStopped, after_failure
from ragio.db.pool import CONNECT_TIMEOUT_SECONDS
from ragio.jobs import store
from ragio.service import Service

log = logging.getLogger(__name__)


@attrs.define
class Running:
    """What a job's handler works with: the service, its job, and the job's progress."""

    service: Service
    job: store.Job
    process: str

    async def file(self) -> bytes:
        data = await self.service.database.run(store.file_of, self.job.id)
        if data is None:
            raise ProblemError(410, "the job's file is gone; upload it again")
        return data

    async def stop_point(self, done: dict[str, Any]) -> None:
        """Between two batches: when the owner asked the job to stop (its row says so,
        whichever process was asked), raise JobStopped with ``done``, what the job had
        done so far (its result once cancelled)."""
        if await self.service.database.run(store.cancel_requested, self.job.id):
            raise JobStopped(done)

    async def total(self, total: int) -> None:
        await self._progress(total=total)

    async def advance(self, done: int) -> None:
        await self._progress(add=done)

    async def set_progress(self, done: int, total: int) -> None:
        """``done`` of ``total``, both as they are now (a crawl's total grows)."""
        await self._progress(total=total, done=min(done, total))

    async def _progress(self, **change: Any) -> None:
        svc = self.service
        await svc.database.run(
            lambda conn: store.set_progress(
                conn, self.job.id, self.process, svc.clock.now(), **change
            )
        )


#: ``async def handler(running) -> result``: a kind's work; its result is stored as the
#: job's (JSON); a ProblemError (or any error, through ``describe``) fails the attempt
JobHandler = Callable[[Running], Awaitable[dict[str, Any] | None]]
#: the problem+json an error is reported as (ragio.http.problems.problem_for)
Describe = Callable[[BaseException], ProblemError]
#: ``async def schedule(service)``: queues the jobs that are due (a data source's
#: sync_interval_minutes), run every SCHEDULE_SECONDS by each process that runs jobs
Schedule = Callable[[Service], Awaitable[None]]
SCHEDULE_SECONDS = 30.0
#: after the connection that hears new jobs failed, how long until it is made again
HEAR_AGAIN_SECONDS = 5.0


@attrs.define
class Worker:
    """Claims and runs up to ``concurrency`` jobs of ``kinds`` at a time, until the service
    stops. ``poke`` wakes it when this process has just queued a job."""

    service: Service
    kinds: Mapping[str, JobHandler]
    describe: Describe
    concurrency: int = 1
    alive_file: Path | None = None  # touched on every pass (a liveness probe reads it)
    schedules: Sequence[Schedule] = ()
    held: dict[int, trio.CancelScope] = attrs.Factory(dict)
    _wake: trio.Event = attrs.Factory(trio.Event)
    _free: trio.Event = attrs.Factory(trio.Event)
    _stopped: trio.Event = attrs.Factory(trio.Event)
    _unreachable: bool = False  # the last pass could not reach the database
    _scheduled_at: float = float("-inf")  # trio time of the last run of the schedules

    @property
    def process(self) -> str:
        """This process's name, as it holds jobs (``Service.process``)."""
        return self.service.process

    def poke(self) -> None:
        self._wake.set()

    async def _hear_queued(self) -> None:
        """Poke this worker whenever any process queues a job (``store.QUEUED_CHANNEL``),
        so that a job queued by another process starts at once, not at the next look
        (POLL_SECONDS). On a connection of its own, in a thread that looks up every
        second to see whether the worker still runs; a database that cannot be reached
        leaves the worker to its polling, and it listens again after a while."""
        stopped = threading.Event()
        token = trio.lowlevel.current_trio_token()

        def listen() -> None:
            with psycopg.connect(
                self.service.database.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            ) as conn:
                conn.execute(f"LISTEN {store.QUEUED_CHANNEL}")
                while not stopped.is_set():
                    for _ in conn.notifies(timeout=1.0, stop_after=1):
                        trio.from_thread.run_sync(self.poke, trio_token=token)

        try:
            while not self.stopping():
                with contextlib.suppress(psycopg.Error, OSError, trio.RunFinishedError):
                    await trio.to_thread.run_sync(listen, abandon_on_cancel=True)
                with trio.move_on_after(HEAR_AGAIN_SECONDS):
                    await self.service.stopping.wait()
        finally:
            stopped.set()

    def stop(self) -> None:
        """Claim no more jobs (the service stops too: ``Service.stopping``)."""
        self._stopped.set()
        self._wake.set()

    def stopping(self) -> bool:
        return self._stopped.is_set() or self.service.stopping.is_set()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Until the service stops and the running jobs have ended (or been handed back
        when this task is cancelled at the end of the grace period)."""
        log.info("running jobs (%s) as %s", ", ".join(sorted(self.kinds)), self.process)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._heartbeat)
            nursery.start_soon(self._hear_queued)
            task_status.started()
            while not self.stopping():
                if self.alive_file is not None:  # alive, whether the database answers or not
                    await trio.to_thread.run_sync(self.alive_file.touch)
                await self._pass(nursery)
                with trio.move_on_after(POLL_SECONDS):
                    await _first(self._wake.wait, self._free.wait, self.service.stopping.wait)
                self._wake = trio.Event()
                self._free = trio.Event()
            while self.held:  # the jobs in progress end, or are handed back when cut off
                await self._free.wait()
                self._free = trio.Event()
            nursery.cancel_scope.cancel()

    async def _pass(self, nursery: trio.Nursery) -> None:
        svc = self.service
        try:
            if trio.current_time() - self._scheduled_at >= SCHEDULE_SECONDS:
                self._scheduled_at = trio.current_time()
                for schedule in self.schedules:
                    await schedule(svc)
            for job in await svc.database.run(store.requeue_stale, svc.clock.now()):
                log.warning(
                    "job %d (%s): its process %s went quiet; queued again",
                    job.id,
                    job.kind,
                    job.claimed_by,
                )
            while len(self.held) < self.concurrency and not self.stopping():
                claimed: store.Job | None = await svc.database.run(
                    store.claim, sorted(self.kinds), self.process, svc.clock.now()
                )
                if claimed is None:
                    break
                job = claimed
                scope = trio.CancelScope()
                self.held[job.id] = scope
                nursery.start_soon(self._run, job, scope)
        except Exception as error:  # noqa: BLE001 (the database is down: the next pass tries)
            if not self._unreachable:  # once, not every pass
                log.warning("could not look for jobs: %s", type(error).__name__)
            self._unreachable = True
        else:
            if self._unreachable:
                log.info("looking for jobs again")
            self._unreachable = False

    async def _run(self, job: store.Job, scope: trio.CancelScope) -> None:
        svc = self.service
        log.info("job %d (%s) started, attempt %d", job.id, job.kind, job.attempts)
        try:
            with scope:
                try:
                    result = await self.kinds[job.kind](Running(svc, job, self.process))
                except trio.Cancelled:
                    raise
                except JobStopped as stop:
                    if await svc.database.run(
                        store.stopped, job.id, self.process, stop.result(), svc.clock.now()
                    ):
                        log.info("job %d (%s) cancelled: it stopped as asked", job.id, job.kind)
                    return
                except Exception as error:  # noqa: BLE001 (the attempt fails with its problem)
                    await self._failed(job, self.describe(error), error)
                    return
                if await svc.database.run(
                    store.finish, job.id, self.process, result, svc.clock.now()
                ):
                    log.info("job %d (%s) done", job.id, job.kind)
            if scope.cancelled_caught:  # lost to another process while quiet
                log.warning("job %d (%s) was taken over by another process", job.id, job.kind)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._hand_back(job)
            raise
        finally:
            self.held.pop(job.id, None)
            self._free.set()

    async def _failed(self, job: store.Job, problem: ProblemError, error: Exception) -> None:
        svc = self.service
        now = svc.clock.now()
        then = after_failure(problem.status, job.attempts, job.max_attempts, now)
        retrying = ""
        if then.run_after is not None:
            retrying = f", again at {then.run_after.isoformat(timespec='seconds')}"
        log.log(
            logging.WARNING if problem.status >= 500 else logging.INFO,
            "job %d (%s) attempt %d failed: %d, %s%s",
            job.id,
            job.kind,
            job.attempts,
            problem.status,
            type(error).__name__,
            retrying,
        )
        try:
            await svc.database.run(
                store.fail, job.id, self.process, problem.body(), now, then.run_after
            )
        except Exception:  # noqa: BLE001 (the heartbeat stops: it will be taken for gone)
            log.warning("could not record the failure of job %d", job.id)

    async def _hand_back(self, job: store.Job) -> None:
        svc = self.service
        try:
            with trio.move_on_after(5):
                await svc.database.run(store.hand_back, [job.id], self.process, svc.clock.now())
                log.info("job %d (%s) handed back: the service stops", job.id, job.kind)
        except Exception:  # noqa: BLE001 (taken for gone after STALE_AFTER instead)
            log.warning("could not hand back job %d; it is resumed once taken for gone", job.id)

    async def _heartbeat(self) -> None:
        svc = self.service
        while True:
            await trio.sleep(HEARTBEAT_SECONDS)
            if not self.held:
                continue
            try:
                kept = await svc.database.run(
                    store.touch, sorted(self.held), self.process, svc.clock.now()
                )
            except Exception:  # noqa: BLE001 (the next beat tries again)
                log.warning("could not touch the heartbeat of jobs %s", sorted(self.held))
                continue
            for lost in set(self.held) - kept:
                self.held[lost].cancel()


async def _first(*waits: Callable[[], Awaitable[Any]]) -> None:
    """Return as soon as one of ``waits`` returns."""
    async with trio.open_nursery() as nursery:

        async def one(wait: Callable[[], Awaitable[Any]]) -> None:
            await wait()
            nursery.cancel_scope.cancel()

        for wait in waits:
            nursery.start_soon(one, wait)
