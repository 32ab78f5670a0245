"""Serve the HTTP app with Hypercorn's Trio worker until SIGINT or SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from http import HTTPStatus
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.logging import AccessLogAtoms
from hypercorn.logging import Logger as HypercornLogger
from hypercorn.trio import serve

from ragcore.settings import Settings
from ragio.chat.dictionaries import keep_dictionaries
from ragio.db.source_connections import keep_sweeping
from ragio.http.app import create_app
from ragio.service import Service
from ragio.startup import open_service
from ragio.supervisor import stop_without_supervisor, tell_supervisor

log = logging.getLogger(__name__)
#: another server run on the service beside the HTTP app: ``companion(service,
#: task_status=…)`` reports ``started`` once it listens, and runs until cancelled
Companion = Callable[..., Awaitable[None]]


class AccessLogger(HypercornLogger):
    """Hypercorn's logger (``Config.logger_class``), its access line's atoms made only
    when the line is logged, and of the request and response alone: Hypercorn's own
    copy every environment variable into each line's arguments, the service's keys
    among them, ~0.1 ms of CPU a request."""

    async def access(self, request: Any, response: Any, request_time: float) -> None:
        if self.access_logger is not None and self.access_logger.isEnabledFor(logging.INFO):
            atoms = AccessAtoms(request, response, request_time)
            self.access_logger.info(self.access_log_format, atoms)

    def atoms(self, request: Any, response: Any, request_time: float) -> Mapping[str, str]:
        return AccessAtoms(request, response, request_time)


class AccessAtoms(AccessLogAtoms):
    """Hypercorn's atoms (``hypercorn.logging.AccessLogAtoms``: the same keys, headers as
    ``{name}i`` and ``{name}o``) without the environment's ``{name}e``."""

    def __init__(self, request: Any, response: Any, request_time: float) -> None:
        dict.__init__(self)
        for name, value in request["headers"]:
            self[f"{{{name.decode('latin1').lower()}}}i"] = value.decode("latin1")
        protocol = request.get("http_version", "ws")
        client = request.get("client")
        if client is None:
            remote_addr = None
        elif len(client) == 2:
            remote_addr = f"{client[0]}:{client[1]}"
        else:
            remote_addr = str(client[0]) if len(client) == 1 else f"<???{client}???>"
        method = request["method"] if request["type"] == "http" else "GET"
        query_string = request["query_string"].decode()
        path_with_qs = request["path"] + ("?" + query_string if query_string else "")
        status_code = status_phrase = "-"
        if response is not None:
            for name, value in response.get("headers", []):
                self[f"{{{name.decode('latin1').lower()}}}o"] = value.decode("latin1")
            status_code = str(response["status"])
            try:
                status_phrase = HTTPStatus(response["status"]).phrase
            except ValueError:
                status_phrase = f"<???{status_code}???>"
        self.update(
            {
                "h": remote_addr,
                "l": "-",
                "t": time.strftime("[%d/%b/%Y:%H:%M:%S %z]"),
                "r": f"{method} {request['path']} {protocol}",
                "R": f"{method} {path_with_qs} {protocol}",
                "s": status_code,
                "st": status_phrase,
                "S": request["scheme"],
                "m": method,
                "U": request["path"],
                "Uq": path_with_qs,
                "q": query_string,
                "H": protocol,
                "b": self["{Content-Length}o"],
                "B": self["{Content-Length}o"],
                "f": self["{Referer}i"],
                "a": self["{User-Agent}i"],
                "T": int(request_time),
                "D": int(request_time * 1_000_000),
                "L": f"{request_time:.6f}",
                "p": f"<{os.getpid()}>",
            }
        )


def hypercorn_config(settings: Settings, listen_fds: Sequence[int] = ()) -> Config:
    """Hypercorn's configuration: binding APP_BIND:APP_PORT, or serving the sockets a
    supervisor bound (``listen_fds``, ragio.supervisor)."""
    config = Config()
    host = settings.app_bind
    config.bind = (
        [f"fd://{fd}" for fd in listen_fds]
        if listen_fds
        else [f"[{host}]:{settings.app_port}" if ":" in host else f"{host}:{settings.app_port}"]
    )
    config.logger_class = AccessLogger
    config.accesslog = logging.getLogger("hypercorn.access")
    config.errorlog = logging.getLogger("hypercorn.error")
    # after SIGTERM, the requests in progress have this long to finish
    config.graceful_timeout = settings.shutdown_grace_seconds
    # also the time a request head has to arrive whole, from the connection's opening or
    # its last answer (slowloris); Hypercorn's read_timeout stays unset: it would limit
    # every read, while a client rightly waits in silence for a long answer or a stream.
    # A body's read timeout (HTTP_READ_TIMEOUT_SECONDS) is ragio.http.connections'.
    config.keep_alive_timeout = 5
    return config


async def run_server(
    settings: Settings,
    *,
    companions: Sequence[Companion] = (),
    listen_fds: Sequence[int] = (),
    ready_fd: int | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Open the service, serve until a stop signal, then close everything in order.
    Each of ``companions`` is started on the same service beside the HTTP app (the voice
    server) and cancelled when the app has stopped. On ``listen_fds``, the sockets of a
    supervisor (which says where it listens itself, once told on ``ready_fd``), else on
    APP_BIND:APP_PORT.

    A stop signal sets ``service.stopping``: the server takes no new connection, and the
    requests, jobs and calls in progress have SHUTDOWN_GRACE_SECONDS to finish."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_service(settings) as svc:
            app = create_app(svc)
            grace = settings.shutdown_grace_seconds
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_stop_on_signal, signals, svc)
                nursery.start_soon(keep_sweeping, svc.source_connections, svc.stopping)
                nursery.start_soon(keep_dictionaries, svc)  # in the background: minutes at most
                if listen_fds:  # started by a supervisor
                    nursery.start_soon(stop_without_supervisor, svc.stopping)
                async with trio.open_nursery() as beside:
                    for companion in companions:
                        await beside.start(partial(companion, svc))
                    binds = await nursery.start(
                        lambda task_status: serve(
                            app,
                            hypercorn_config(settings, listen_fds),
                            shutdown_trigger=svc.stopping.wait,
                            task_status=task_status,
                        )
                    )
                    log.info("serving on %s (%s mode)", ", ".join(binds), svc.mode)
                    if not listen_fds:
                        print(f"ragchat listening on {', '.join(binds)}", flush=True)
                    task_status.started(binds)
                    tell_supervisor(ready_fd)
                    await svc.stopping.wait()
                    # the companions end their work themselves (the voice server its
                    # calls, politely) or are cut off at the end of the grace period;
                    # serve() returns once its graceful shutdown is done (the requests,
                    # then the app's background work: a running job), all of it cut off
                    # 5 s after the grace period at the latest, counted from the signal
                    stopped_at = trio.current_time()
                    beside.cancel_scope.deadline = stopped_at + grace
                    nursery.cancel_scope.deadline = stopped_at + grace + 5


async def run_companions(
    settings: Settings,
    companions: Sequence[Companion],
    *,
    ready_fd: int | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """``companions`` alone on the service (``ragchat voice``, ``ragchat worker``), until
    a stop signal; then they have SHUTDOWN_GRACE_SECONDS to end their work. Once they
    have started, a supervisor that started this process is told (``ready_fd``)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_service(settings) as svc, trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_signal, signals, svc)
            nursery.start_soon(keep_sweeping, svc.source_connections, svc.stopping)
            nursery.start_soon(keep_dictionaries, svc)
            if ready_fd is not None:  # started by a supervisor
                nursery.start_soon(stop_without_supervisor, svc.stopping)
            async with trio.open_nursery() as beside:
                for companion in companions:
                    await beside.start(partial(companion, svc))
                task_status.started()
                tell_supervisor(ready_fd)
                await svc.stopping.wait()
                beside.cancel_scope.deadline = trio.current_time() + settings.shutdown_grace_seconds
            nursery.cancel_scope.cancel()


async def _stop_on_signal(signals: Any, svc: Service) -> None:
    async for signum in signals:
        log.info(
            "received %s, shutting down (up to %gs for the work in progress)",
            signal.Signals(signum).name,
            svc.settings.shutdown_grace_seconds,
        )
        svc.stopping.set()
        return
