"""`ragchat serve` stopped by SIGTERM again and again, as an orchestrator does, each time
with requests in flight (questions, uploads, a body still arriving) and the voice
server beside it on the embedded PostgreSQL: every time the process exits with code 0
within its grace period (SHUTDOWN_GRACE_SECONDS, then 5 s at most for what is cut off),
and leaves no PostgreSQL behind. The first rounds also stop the local embedder's faster
graph while it is built (a new DATA_DIR): a stop once waited for that build to end."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from tests.io.processes import (
    RAGCHAT,
    clean_environ,
    free_port,
    postgres_processes_for,
    wait_until_healthy,
)

ROUNDS = 4
GRACE = 1  # SHUTDOWN_GRACE_SECONDS here: short, so that the rounds are quick
#: the docs promise: the grace period, then 5 s at most for what is cut off
PROMISED = GRACE + 5
TEXT = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays.\n" * 40


def load(client: httpx.Client, port: int) -> list[Callable[[], object]]:
    """Requests to be in flight when the signal comes; their answers do not matter."""

    def ask(n: int) -> Callable[[], object]:
        return lambda: client.post("/chat", json={"question": f"When does it open? ({n})"})

    def stream() -> None:
        with client.stream("POST", "/chat/stream", json={"question": "Hours?"}) as response:
            for _ in response.iter_bytes():
                pass

    def trickle() -> None:
        """A body that never ends: the graceful stop must not wait for it past the grace."""
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                b"POST /documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n{"
            )
            for _ in range(100):
                sock.sendall(b" ")
                time.sleep(0.1)

    return [
        ask(1),
        ask(2),
        lambda: client.post("/documents", json={"name": "hours.md", "text": TEXT}),
        stream,
        trickle,
        lambda: client.get("/health"),
    ]


def quietly(work: Callable[[], object]) -> None:
    with contextlib.suppress(httpx.HTTPError, OSError):  # cut off by the stop: expected
        work()


def test_serve_stops_within_its_grace_period_every_time_with_requests_in_flight(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    for round_ in range(ROUNDS):
        port = free_port()
        log = tmp_path / f"serve-{round_}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                [*RAGCHAT, "serve"],
                cwd=tmp_path,
                env=clean_environ(
                    data_dir=data,
                    app_port=port,
                    voice_port=free_port(),
                    voiceai_api_key="dg-key-for-the-voice-server",
                    shutdown_grace_seconds=GRACE,
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
            requests: list[threading.Thread] = []
            try:
                wait_until_healthy(process, str(client.base_url))
                requests = [
                    threading.Thread(target=quietly, args=(work,), daemon=True)
                    for work in load(client, port)
                ]
                for thread in requests:
                    thread.start()
                time.sleep(0.3)  # the requests arrive and are at work
                process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                try:
                    code = process.wait(PROMISED + 2)
                except subprocess.TimeoutExpired:
                    code = None
                took = time.monotonic() - signalled
            finally:
                if process.poll() is None:  # failed: killed, and its PostgreSQL with it
                    process.kill()
                    process.wait()
                    for pid in postgres_processes_for(data / "postgres"):
                        psutil.Process(pid).terminate()
                for thread in requests:
                    thread.join(10)
                client.close()
        printed = log.read_text()
        assert code == 0, f"round {round_}: exit code {code} after {took:.1f} s\n{printed}"
        assert took <= PROMISED, f"round {round_}: stopped after {took:.1f} s\n{printed}"
        assert "voice server: no call in progress; stopped" in printed, printed
        assert postgres_processes_for(data / "postgres") == [], f"round {round_}\n{printed}"
        # the local embedder's faster graph, built in the background, left nothing half-built
        assert not list((data / "models").glob("building-*")), f"round {round_}"
