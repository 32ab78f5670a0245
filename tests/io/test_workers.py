"""`ragchat serve` on several cores (APP_WORKERS, ragio.supervisor), run as a user runs it:
API processes sharing the one port, the job worker and the voice server beside them,
a dead process started again, one stop for all, and nothing left behind."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import psutil

from tests.io.processes import (
    RAGCHAT,
    clean_environ,
    free_port,
    postgres_processes_for,
    run_cli,
    wait_until_healthy,
)

GRACE = 2


def children(process: subprocess.Popen) -> dict[str, list[psutil.Process]]:
    """The processes ``serve`` started, by kind: api, worker, voice."""
    found: dict[str, list[psutil.Process]] = {"api": [], "worker": [], "voice": []}
    for child in psutil.Process(process.pid).children():
        command = " ".join(child.cmdline())
        kind = "api" if "--listen-fds" in command else command.split()[-3]
        found.setdefault(kind, []).append(child)
    return found


def wait_for(condition, timeout: float = 60):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("not in time")


def connections_of(pids: list[int], port: int) -> dict[int, int]:
    """How many established connections to ``port`` each process holds."""
    held = {}
    for pid in pids:
        held[pid] = sum(
            1
            for connection in psutil.Process(pid).net_connections("tcp")
            if connection.status == psutil.CONN_ESTABLISHED and connection.laddr.port == port
        )
    return held


def start(tmp_path: Path, **settings: object) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = clean_environ(
        data_dir=tmp_path / "data",
        app_port=port,
        app_workers=2,
        shutdown_grace_seconds=GRACE,
        **settings,
    )
    process = subprocess.Popen(
        [*RAGCHAT, "serve"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "serve.log").open("wb"),
        text=True,
    )
    wait_until_healthy(process, f"http://127.0.0.1:{port}")
    return process, port


def test_serve_runs_api_processes_on_one_port_beside_the_job_worker_and_the_voice_server(
    tmp_path: Path,
) -> None:
    voice_port = free_port()
    process, port = start(tmp_path, voiceai_api_key="dg-key", voice_port=voice_port)
    base = f"http://127.0.0.1:{port}"
    pgdata = tmp_path / "data" / "postgres"
    try:
        # one line each says where it listens, as a lone process says it
        said = [process.stdout.readline().strip() for _ in range(2)]
        assert sorted(said) == sorted(
            [f"ragchat listening on {base}", f"ragchat voice listening on 127.0.0.1:{voice_port}"]
        )
        wait_for(lambda: "API process 2 ready" in (tmp_path / "serve.log").read_text())
        kinds = children(process)
        assert len(kinds["api"]) == 2 and len(kinds["worker"]) == 1 and len(kinds["voice"]) == 1
        api = [child.pid for child in kinds["api"]]
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{voice_port}/metrics").status_code == 200)

        # the kernel spreads the connections over the API processes: each serves some
        # (each answer comes within Hypercorn's 5 s keep-alive: the connection is held)
        sockets = []
        for _ in range(24):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            sockets.append(sock)
        assert all(b" 200 " in sock.recv(65536) for sock in sockets)
        held = connections_of(api, port)
        assert sum(held.values()) == 24 and all(held.values()), held
        for sock in sockets:
            sock.close()
        # and /metrics, on any of them, counts them all
        health = 'ragchat_http_requests_total{method="GET",route="/health",status="200"}'
        for _ in range(4):
            with httpx.Client(base_url=base, timeout=10) as fresh:  # a new connection each
                scraped = fresh.get("/metrics").text
            [line] = [line for line in scraped.splitlines() if line.startswith(health)]
            assert float(line.split()[-1]) >= 24

        # one database for all: a document stored through one is found through any
        with httpx.Client(base_url=base, timeout=60) as client:
            stored = client.post(
                "/documents",
                json={"name": "hours.md", "text": "# Hours\n\nThe shop opens at 9 am daily."},
            )
            assert stored.status_code == 201, stored.text
            for _ in range(4):
                with httpx.Client(base_url=base, timeout=60) as fresh:  # a new connection
                    answer = fresh.post("/chat", json={"question": "When does the shop open?"})
                assert answer.status_code == 200 and answer.json()["citations"], answer.text

        # a process that dies is started again; meanwhile every request is answered
        victim = kinds["api"][0]
        victim.kill()
        for _ in range(10):
            with httpx.Client(base_url=base, timeout=30) as fresh:
                assert fresh.get("/health").status_code == 200
        again = wait_for(lambda: (k := children(process)["api"]) and len(k) == 2 and k)
        assert victim.pid not in {child.pid for child in again}
        log = (tmp_path / "serve.log").read_text()
        assert f"API process 1 (pid {victim.pid}) ended with exit code -9" in log

        # one SIGTERM stops them all, within the grace period, and the database after them
        everyone = [psutil.Process(process.pid), *psutil.Process(process.pid).children()]
        process.send_signal(signal.SIGTERM)
        assert process.wait(GRACE + 15) == 0
        assert not [p for p in everyone if p.is_running() and p.status() != "zombie"]
        assert postgres_processes_for(pgdata) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in postgres_processes_for(pgdata):
            psutil.Process(pid).kill()


def test_the_processes_of_a_killed_serve_stop_by_themselves(tmp_path: Path) -> None:
    process, port = start(tmp_path, run_jobs="false")  # no job worker: a quicker start
    pgdata = tmp_path / "data" / "postgres"
    try:
        left = wait_for(lambda: (k := children(process)["api"]) and len(k) == 2 and k)
        process.kill()  # no SIGTERM to pass on: they see their supervisor gone
        process.wait()
        wait_for(lambda: not [p for p in left if p.is_running() and p.status() != "zombie"], 20)
        with socket.socket() as probe:  # and nothing holds the port
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))
    finally:
        for pid in postgres_processes_for(pgdata):
            psutil.Process(pid).kill()


def test_a_start_up_error_is_said_once_and_nothing_is_left_running(tmp_path: Path) -> None:
    closed = free_port()
    result = run_cli(
        "serve",
        cwd=tmp_path,
        app_port=free_port(),
        app_workers=3,
        database_url=f"postgresql://ragchat:pw@127.0.0.1:{closed}/ragchat",
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("cannot connect to the database at DATABASE_URL") == 1


def test_workers_out_of_range_is_named(tmp_path: Path) -> None:
    result = run_cli("serve", "--workers", "65", cwd=tmp_path)
    assert result.returncode == 2
    assert "--workers must be 0 (one per core) to 64" in result.stderr
    bad = run_cli("serve", cwd=tmp_path, app_workers="many")
    assert bad.returncode == 2 and "APP_WORKERS" in bad.stderr
