"""`ragchat worker` as a user runs it: it takes the jobs queued in the database (here a
large upload that another process received), runs them, says it is alive in
DATA_DIR/worker.alive, and stops on SIGTERM, handing back a job it cannot finish."""

from __future__ import annotations

import signal
import subprocess
import time

import psycopg
import trio
from psycopg.types.json import Jsonb

from ragio.db.migrations import apply_migrations
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.processes import RAGCHAT, clean_environ
from tests.io.test_document_jobs import HOURS


def queue_ingestion(database_url: str, name: str, data: bytes) -> int:
    """A large upload's job, as `POST /documents` queues it on another process."""
    payload = {"name": name, "format": "markdown", "charset": None, "size_bytes": len(data)}
    with psycopg.connect(database_url, autocommit=True) as conn:
        apply_migrations(conn)
        [(job_id,)] = conn.execute(
            "INSERT INTO jobs (kind, payload, max_attempts) VALUES ('ingest', %s, 5) RETURNING id",
            (Jsonb(payload),),
        ).fetchall()
        conn.execute("INSERT INTO job_files (job_id, data) VALUES (%s, %s)", (job_id, data))
    return job_id


def job(database_url: str, job_id: int) -> tuple:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT status, attempts, claimed_by, result FROM jobs WHERE id = %s", (job_id,)
        ).fetchone()


async def wait_until(condition, seconds: float = 60) -> None:
    with trio.fail_after(seconds):
        while not condition():
            await trio.sleep(0.1)


async def test_the_worker_runs_a_queued_job_and_hands_back_one_it_cannot_finish(
    serve_fake, database_url, tmp_path
):
    openai = await serve_fake(FakeOpenAI())
    settings = on_openai(
        openai, database_url=database_url, data_dir=tmp_path / "data", shutdown_grace_seconds=1
    )
    first = queue_ingestion(database_url, "hours.md", HOURS)
    worker = subprocess.Popen(
        [*RAGCHAT, "worker"],
        cwd=tmp_path,
        env=clean_environ(**settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        await wait_until(lambda: job(database_url, first)[0] == "done" or worker.poll() is not None)
        status, attempts, claimed_by, result = job(database_url, first)
        assert (status, attempts) == ("done", 1)
        assert result["name"] == "hours.md" and result["chunk_count"] >= 2
        assert claimed_by.split(":")[1] == str(worker.pid)  # host:pid:random
        alive = tmp_path / "data" / "worker.alive"
        assert alive.exists() and time.time() - alive.stat().st_mtime < 10

        openai.delay = 60  # the embedding provider hangs: the next job cannot finish
        second = queue_ingestion(database_url, "prices.md", HOURS.replace(b"open", b"close"))
        await wait_until(lambda: job(database_url, second)[0] == "running")
    finally:
        worker.send_signal(signal.SIGTERM)
        code = await trio.to_thread.run_sync(worker.wait, 30)
    output = worker.stdout.read()
    assert code == 0, output
    assert "received SIGTERM" in output
    # handed back for the next process: queued, its attempt not counted, its file kept
    assert job(database_url, second)[:3] == ("queued", 0, None)
    with psycopg.connect(database_url) as conn:
        [(kept,)] = conn.execute("SELECT job_id FROM job_files").fetchall()
    assert kept == second
