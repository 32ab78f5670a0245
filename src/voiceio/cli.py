"""The `ragchat` command: ragio's commands, with the voice server added where it belongs.

The command line lives in ragio; this module is the entry point only because ``serve``
runs the voice server beside the HTTP API and ``voice`` runs it alone, and ragio cannot
import voiceio (dependencies point one way: voiceio -> ragio -> ragcore).
"""

from __future__ import annotations

import argparse
import logging
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from ragcore.settings import Settings, voice_refusal
from ragio import cli

if TYPE_CHECKING:
    from ragio.service import Service

log = logging.getLogger(__name__)


async def serve_command(settings: Settings, args: argparse.Namespace) -> int:
    """The HTTP API; on the embedded database with VOICEAI_API_KEY set, the voice server
    too: with several API processes (APP_WORKERS), as a process of its own beside them
    (``ragchat voice`` on the embedded server the supervisor runs); with one, in the same
    process (the embedded database cannot be shared with a process of another ``serve``)."""
    from ragio.supervisor import supervised_workers

    supervised = args.listen_fds is not None  # one of a supervisor's API processes
    voice = bool(settings.voiceai_api_key and not settings.database_url)
    if voice:
        refusal = voice_refusal(settings)
        if refusal:
            raise cli.StartupError(refusal)
    elif settings.voiceai_api_key and not supervised:
        log.info("calls are answered by `ragchat voice`, run beside this on DATABASE_URL")
    ports = (_voice_port(settings),) if voice else ()
    if not supervised and supervised_workers(settings) > 1:
        return await cli.supervise_command(settings, args, voice, ports)
    companions: tuple[Any, ...] = ()
    if voice:
        from voiceio.server import serve_voice  # imported when needed: a quicker command line

        companions = (partial(_announced, serve_voice),)
    return await cli.serve_command(settings, args, companions, ports)


async def voice_command(settings: Settings, args: argparse.Namespace) -> int:
    """The voice server alone, against DATABASE_URL, as the compose file's ``voice``
    service and a Kubernetes deployment run it."""
    if not settings.database_url:
        raise cli.StartupError(
            "`ragchat voice` runs against DATABASE_URL (the API's database); on the embedded "
            "database, `ragchat serve` answers calls itself when VOICEAI_API_KEY is set"
        )
    refusal = voice_refusal(settings)
    if refusal:
        raise cli.StartupError(refusal)
    cli.check_ports(_voice_port(settings))
    from ragio.server import run_companions
    from voiceio.server import serve_voice

    async with cli.startup_errors():
        await run_companions(settings, (partial(_announced, serve_voice),), ready_fd=args.ready_fd)
    return 0


def _voice_port(settings: Settings) -> tuple[str, int, str]:
    return settings.voice_bind, settings.voice_port, "VOICE_PORT"


async def _announced(serve: Any, service: Service, *, task_status: Any) -> None:
    """``serve``, saying on stdout where it listens, as ``serve`` does for the API."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve, service))
        print(f"ragchat voice listening on {service.settings.voice_bind}:{port}", flush=True)
        task_status.started(port)


#: every command of ``ragchat``: ragio's, with these two
COMMANDS = {**cli.COMMANDS, "serve": serve_command, "voice": voice_command}


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
