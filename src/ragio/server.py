"""Serve the HTTP app with Hypercorn's Trio worker until SIGINT or SIGTERM."""

from __future__ import annotations

import logging
import signal
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from ragio.http.app import create_app
from ragio.service import open_service

log = logging.getLogger(__name__)


def hypercorn_config(settings: Any) -> Config:
    config = Config()
    host = settings.app_bind
    config.bind = [
        f"[{host}]:{settings.app_port}" if ":" in host else f"{host}:{settings.app_port}"
    ]
    config.accesslog = logging.getLogger("hypercorn.access")
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 5
    # also the time a request head has to arrive whole, from the connection's opening or
    # its last answer (slowloris); Hypercorn's read_timeout stays unset: it would limit
    # every read, while a client rightly waits in silence for a long answer or a stream.
    # A body's read timeout (HTTP_READ_TIMEOUT_SECONDS) is ragio.http.connections'.
    config.keep_alive_timeout = 5
    return config


async def run_server(settings: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Open the service, serve until a stop signal, then close everything in order."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_service(settings) as svc:
            app = create_app(svc)
            stop = trio.Event()

            async def shutdown_trigger() -> None:
                await stop.wait()

            async def watch_signals() -> None:
                async for signum in signals:
                    log.info("received %s, shutting down", signal.Signals(signum).name)
                    stop.set()
                    return

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_signals)
                binds = await nursery.start(
                    lambda task_status: serve(
                        app,
                        hypercorn_config(settings),
                        shutdown_trigger=shutdown_trigger,
                        task_status=task_status,
                    )
                )
                log.info("serving on %s (%s mode)", ", ".join(binds), svc.mode)
                print(f"ragchat listening on {', '.join(binds)}", flush=True)
                task_status.started(binds)
                await stop.wait()
                # serve() returns once its graceful shutdown is done; then the nursery ends.
                nursery.cancel_scope.deadline = trio.current_time() + 10
