"""`ragchat serve` on every core: several API processes on one port, the job worker and
the voice server beside them, each started again when it dies.

One Python process answers with one core at most (ragcore.processes), so ``serve`` with
APP_WORKERS other than 1 is a supervisor, which:

1. checks the ports, then binds a listening socket for each API process itself, all on
   APP_PORT with SO_REUSEPORT (``_listening_sockets``), and keeps them: each process
   serves its own (passed down as ``fd://N``), the kernel spreads connections over them,
   and the connections of a process that starts again wait in its socket's queue;
2. starts the embedded PostgreSQL when DATABASE_URL is unset, and gives its URL to every
   process it starts (with ``EMBEDDED_DATABASE``, so /status and /health still say the
   database is the embedded one);
3. starts the first API process and waits until it listens (it applies the migrations),
   or returns its exit code if it stops first: a start-up error is said once, by it;
4. then the other API processes, the job worker (``ragchat worker``, when RUN_JOBS: the
   API processes run no job, so JOBS_CONCURRENCY holds for the whole service) and, on the
   embedded database with VOICEAI_API_KEY, the voice server (``ragchat voice``), and says
   where the API listens once the voice server does too;
5. starts again any process that dies (``ragcore.processes.restart_delay``);
6. on SIGINT or SIGTERM, passes SIGTERM on: each process stops as a lone ``serve`` does,
   its work in progress given SHUTDOWN_GRACE_SECONDS; whatever still runs 10 s after that
   is killed; then the embedded database stops.

Every process gets ``PROMETHEUS_MULTIPROC_DIR``, a fresh folder of this run, so that
``GET /metrics`` on any of them counts them all (``ragio.metrics``). A child says it is
ready by writing to the pipe named by its ``--ready-fd``.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from ragcore.processes import api_processes, cores_allowed, deaths_in_a_row, restart_delay
from ragcore.settings import Settings
from ragio.db.embedded import EMBEDDED_DATABASE, EmbeddedPostgres

log = logging.getLogger(__name__)
#: what is still running this long after the grace period is killed
KILL_AFTER_GRACE_SECONDS = 10.0


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by the container's CPU
    quota when it has one (cgroup v2)."""
    try:
        schedulable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        schedulable = os.cpu_count() or 1
    try:
        cpu_max: str | None = Path("/sys/fs/cgroup/cpu.max").read_text()
    except OSError:
        cpu_max = None
    return cores_allowed(schedulable, cpu_max)


def supervised_workers(settings: Settings) -> int:
    """How many API processes ``serve`` runs (1: no supervisor, everything in one)."""
    return api_processes(settings.app_workers, usable_cores())


async def stop_without_supervisor(stopping: trio.Event) -> None:
    """In a process a supervisor started: stop (``stopping``, as on SIGTERM) when the
    supervisor is gone, even killed, so that none of its processes is left holding the
    port. Its death is seen as this process's parent changing (checked every second:
    ``prctl``'s PDEATHSIG would fire when the thread that started the process ends, and
    Trio starts processes from its worker threads)."""
    parent = os.getppid()
    while not stopping.is_set():
        await trio.sleep(1)
        if os.getppid() != parent:
            log.warning("the `ragchat serve` that started this process is gone: stopping")
            stopping.set()


def tell_supervisor(ready_fd: int | None) -> None:
    """Say on the supervisor's pipe that this process listens (nothing when unsupervised)."""
    if ready_fd is None:
        return
    try:
        os.write(ready_fd, b"ready\n")
    finally:
        os.close(ready_fd)


@attrs.define
class Child:
    """One process the supervisor keeps running: ``argv`` plus ``--ready-fd``."""

    name: str
    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    process: Any = None
    started_at: float = 0.0  # when it said it was ready (Trio's clock)
    deaths: int = 0


@attrs.define
class Supervisor:
    settings: Settings
    command: list[str]  # how to run ``ragchat`` (``python -m voiceio.cli``)
    workers: int
    voice: bool  # the voice server runs beside the API (embedded database, VOICEAI_API_KEY)
    verbose: bool = False
    children: list[Child] = attrs.field(factory=list)
    stopping: trio.Event = attrs.field(factory=trio.Event)

    async def run(self) -> int:
        """Supervise until a stop signal; the exit code of ``serve``."""
        listeners = _listening_sockets(self.settings, self.workers)
        metrics_dir = tempfile.mkdtemp(prefix="ragchat-metrics-")
        embedded = None
        try:
            env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}
            if not self.settings.database_url:
                embedded = EmbeddedPostgres(Path(self.settings.data_dir))
                env["DATABASE_URL"] = await trio.to_thread.run_sync(embedded.start)
                env[EMBEDDED_DATABASE] = "1"
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._stop_on_signal, signals)
                    code = await self._start_all(nursery, env, listeners)
                    if code is not None:  # what did start stops as on SIGTERM
                        self.stopping.set()
                        await self._stop_children()
                        nursery.cancel_scope.cancel()
                        return code
                    binds = ", ".join(_bind(sock) for sock in listeners[0])
                    log.info("serving on %s with %d API processes", binds, self.workers)
                    print(f"ragchat listening on {binds}", flush=True)
                    await self.stopping.wait()
                    await self._stop_children()
                    nursery.cancel_scope.cancel()
            return 0
        finally:
            for sockets in listeners:
                for sock in sockets:
                    sock.close()
            with trio.CancelScope(shield=True):
                await self._kill_children()
                if embedded is not None:
                    await trio.to_thread.run_sync(embedded.stop)
            shutil.rmtree(metrics_dir, ignore_errors=True)

    async def _start_all(
        self,
        nursery: trio.Nursery,
        env: dict[str, str],
        listeners: Sequence[Sequence[socket.socket]],
    ) -> int | None:
        """Every child started; None, or the exit code of the first API process or the
        voice server when it stopped before it was ready (a start-up error, said by it)."""
        api_env = {**env, "APP_WORKERS": "1", "RUN_JOBS": "false"}

        def api_child(number: int) -> Child:
            fds = tuple(sock.fileno() for sock in listeners[number - 1])
            serve = [*self._ragchat("serve"), "--listen-fds", ",".join(map(str, fds))]
            return Child(f"API process {number}", serve, api_env, fds)

        first = api_child(1)
        code = await self._start(first)
        if code is not None:
            return code
        nursery.start_soon(self._keep, first)
        others = [api_child(n) for n in range(2, self.workers + 1)]
        if self.settings.run_jobs:
            others.append(Child("job worker", self._ragchat("worker"), env))
        voice = Child("voice server", self._ragchat("voice"), env) if self.voice else None
        if voice is not None:
            code = await self._start(voice)
            if code is not None:
                return code
            nursery.start_soon(self._keep, voice)
        for child in others:  # their start-up is the first one's: they come up beside it
            nursery.start_soon(self._start_and_keep, child)
        return None

    def _ragchat(self, command: str) -> list[str]:
        return [*self.command, *(["--verbose"] if self.verbose else []), command]

    async def _start(self, child: Child) -> int | None:
        """Start ``child`` and wait until it is ready: None, or its exit code when it
        stopped first."""
        self.children.append(child)
        read_end, write_end = os.pipe()
        try:
            child.process = await trio.lowlevel.open_process(
                [*child.argv, "--ready-fd", str(write_end)],
                env=child.env,
                pass_fds=(*child.pass_fds, write_end),
            )
        finally:
            os.close(write_end)
        async with trio.lowlevel.FdStream(read_end) as ready:
            said = await ready.receive_some(16)  # b"" when it ended without a word
        if said:
            child.started_at = trio.current_time()
            log.info("%s ready (pid %d)", child.name, child.process.pid)
            return None
        return int(await child.process.wait())

    async def _start_and_keep(self, child: Child) -> None:
        died = await self._start(child) is not None  # before it was ready
        if died and (self.stopping.is_set() or not await self._restart_after_death(child, 0.0)):
            return
        await self._keep(child)

    async def _keep(self, child: Child) -> None:
        """Wait for ``child`` to die; start it again, as long as the service runs."""
        while True:
            await child.process.wait()
            if self.stopping.is_set():
                return
            ran = trio.current_time() - child.started_at
            if not await self._restart_after_death(child, ran):
                return

    async def _restart_after_death(self, child: Child, ran_seconds: float) -> bool:
        """Log the death, wait, start it again; False when the service stops meanwhile."""
        process = child.process
        child.deaths = deaths_in_a_row(child.deaths, ran_seconds)
        delay = restart_delay(child.deaths)
        log.warning(
            "%s (pid %d) ended with exit code %s; starting it again in %g s",
            child.name,
            process.pid,
            process.returncode,
            delay,
        )
        _forget_process(process.pid)
        with trio.move_on_after(delay):
            await self.stopping.wait()
        if self.stopping.is_set():
            return False
        self.children.remove(child)
        while await self._start(child) is not None:  # died before it was ready
            if self.stopping.is_set():
                return False
            child.deaths += 1
            self.children.remove(child)
            _forget_process(child.process.pid)
            with trio.move_on_after(restart_delay(child.deaths)):
                await self.stopping.wait()
            if self.stopping.is_set():
                return False
        return True

    async def _stop_on_signal(self, signals: Any) -> None:
        async for signum in signals:
            log.info(
                "received %s, stopping the %d processes (up to %gs for the work in progress)",
                signal.Signals(signum).name,
                len(self.children),
                self.settings.shutdown_grace_seconds,
            )
            self.stopping.set()
            return

    async def _stop_children(self) -> None:
        """SIGTERM to each child; wait for them all, killing what outlives the grace."""
        for child in self.children:
            if child.process is not None and child.process.returncode is None:
                child.process.send_signal(signal.SIGTERM)
        deadline = self.settings.shutdown_grace_seconds + KILL_AFTER_GRACE_SECONDS
        with trio.move_on_after(deadline):
            for child in self.children:
                if child.process is not None:
                    await child.process.wait()

    async def _kill_children(self) -> None:
        for child in self.children:
            process = child.process
            if process is not None and process.returncode is None:
                log.warning("%s (pid %d) did not stop in time: killed", child.name, process.pid)
                process.kill()
                await process.wait()


def _listening_sockets(settings: Settings, workers: int) -> list[list[socket.socket]]:
    """For each API process, its own listening sockets on APP_BIND:APP_PORT, all bound
    with SO_REUSEPORT (by Hypercorn's own code for several workers): the kernel spreads
    the connections over them evenly, by address. One socket shared by all would not: the
    process that happens to be idle accepts every connection arriving while it is (20 of
    20 keep-alive connections went to one of two processes, measured). The supervisor
    keeps them: connections to a process starting again wait in its socket's queue."""
    from ragio.server import hypercorn_config

    config = hypercorn_config(settings)
    config.workers = max(2, workers)  # SO_REUSEPORT
    made: list[list[socket.socket]] = []
    try:
        for _ in range(workers):
            sockets = config.create_sockets().insecure_sockets
            made.append(sockets)
            for sock in sockets:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted inherit
                sock.listen(config.backlog)
    except BaseException:
        for sockets in made:
            for sock in sockets:
                sock.close()
        raise
    return made


def _forget_process(pid: int) -> None:
    """What the metrics kept of a process that is gone (its live gauges, its last calls)."""
    from ragio import metrics

    metrics.process_ended(pid)


def _bind(sock: socket.socket) -> str:
    from hypercorn.utils import repr_socket_addr

    return f"http://{repr_socket_addr(sock.family, sock.getsockname())}"


def ragchat_command() -> list[str]:
    """How this process was started as ``ragchat``, for its children."""
    return [sys.executable, "-m", "voiceio.cli"]
