"""Start `ragchat` as a real process, the way a user does."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

RAGCHAT = [sys.executable, "-m", "voiceio.cli"]


def free_port() -> int:
    """A port free now, for a server started later: below the kernel's ephemeral range
    (32768 and up), so no server binding port 0 meanwhile (a fake) can be given it."""
    while True:
        port = random.randrange(20000, 32000)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def clean_environ(**settings: object) -> dict[str, str]:
    """This process's environment without any ragchat setting, plus ``settings``."""
    from ragcore.settings import SETTING_NAMES

    env = {k: v for k, v in os.environ.items() if k not in SETTING_NAMES}
    # a machine with FreeDict's German dictionary installed would read it at every start
    env["DICTIONARY_DIR"] = "off"
    # one process per `serve`, as the tests read it (its pid, its log); a supervisor of
    # several is tested where it is asked for (test_workers.py)
    env["APP_WORKERS"] = "1"
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.update({k.upper(): str(v) for k, v in settings.items()})
    return env


def run_cli(*args: str, cwd: Path, timeout: float = 120, **settings: object):
    return subprocess.run(
        [*RAGCHAT, *args],
        cwd=cwd,
        env=clean_environ(**settings),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextmanager
def running_service(cwd: Path, **settings: object) -> Iterator[tuple[subprocess.Popen, str]]:
    """`ragchat serve` on a free port; yields the process and its base URL once /health answers.

    Stopped with SIGTERM on the way out (if the test has not stopped it already).
    """
    port = free_port()
    process = subprocess.Popen(
        [*RAGCHAT, "serve"],
        cwd=cwd,
        env=clean_environ(app_port=port, **settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, base_url)
        yield process, base_url
    finally:
        stop(process, 30)


def stop(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM, and SIGKILL when it has not ended within ``grace`` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_healthy(process: subprocess.Popen, base_url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"ragchat serve exited early:\n{process.stdout.read()}")
        try:
            if httpx.get(f"{base_url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("ragchat serve did not become healthy in time")


def postgres_processes_for(pgdata: Path) -> list[int]:
    """PIDs of PostgreSQL servers whose data directory is ``pgdata``."""
    import psutil

    found = []
    for proc in psutil.process_iter(attrs=["name", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and str(pgdata.resolve()) in cmdline:
            found.append(proc.pid)
    return found


def run_in_process(
    monkeypatch: Any, capsys: Any, *args: str, cwd: Path, **settings: object
) -> tuple[int, str, str]:
    """`ragchat ARGS` run in this process, as ``run_cli`` runs it in another (the same
    environment, folder and output): (exit code, stdout, stderr). For commands whose
    process start-up would cost a test more than the command (a short one run many
    times); from a plain test function, since the command runs its own Trio loop."""
    from ragcore.settings import SETTING_NAMES
    from voiceio.cli import main

    for name in SETTING_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name.upper(), str(value))
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
