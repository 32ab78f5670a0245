"""Uploads larger than INGEST_JOB_BYTES: 202 and a job the client polls, through the real
app on the embedded PostgreSQL."""

from __future__ import annotations

import math
from pathlib import Path

import httpx
import psycopg
import pytest
import trio

from ragcore.knowledge.documents import EMBED_BATCH
from tests.io.conftest import serve_service
from tests.io.test_documents import ask, upload
from tests.io.test_http_errors import assert_problem, count_rows

HOURS = (
    "# Opening hours\n\n" + "We open at 9 am on weekdays and at 10 am on Saturdays. " * 60
).encode()


@pytest.fixture
def settings_overrides():
    return {"ingest_job_bytes": 2000}


async def wait_for(api: httpx.AsyncClient, location: str, *statuses: str) -> dict:
    """The job once its status is one of ``statuses`` (polled as a client would)."""
    with trio.fail_after(120):
        while True:
            response = await api.get(location)
            assert response.status_code == 200, response.text
            job = response.json()
            if job["status"] in statuses:
                return job
            await trio.sleep(0.05)


def uploads(service) -> list[str]:
    folder = Path(service.settings.data_dir) / "uploads"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


async def test_a_large_upload_is_a_job_the_client_polls_until_the_document_is_stored(api, service):
    response = await upload(api, "hours.md", HOURS, "text/markdown")
    assert response.status_code == 202, response.text
    job = response.json()
    assert response.headers["location"] == f"/documents/jobs/{job['id']}"
    assert job["status"] in ("queued", "running")
    assert (job["name"], job["size_bytes"], job["document"], job["problem"]) == (
        "hours.md",
        len(HOURS),
        None,
        None,
    )

    done = await wait_for(api, response.headers["location"], "done", "failed")
    assert done["status"] == "done", done["problem"]
    assert done["chunks_total"] >= 2 and done["chunks_done"] == done["chunks_total"]
    document = done["document"]
    assert (document["name"], document["duplicate"], document["replaced"]) == (
        "hours.md",
        False,
        [],
    )
    assert document["chunk_count"] == done["chunks_total"]
    assert done["finished_at"] and done["started_at"]
    assert uploads(service) == []  # the file was kept only until it was ingested

    listed = (await api.get("/documents")).json()["documents"]
    assert [d["id"] for d in listed] == [document["id"]]
    answer = await ask(api, "When do you open on Saturdays?")
    assert "10 am" in answer["answer"]
    assert answer["citations"][0]["document_name"] == "hours.md"


async def test_a_small_upload_is_still_answered_at_once(api):
    response = await upload(api, "short.txt", b"We open at 9 am.", "text/plain")
    assert response.status_code == 201, response.text


async def test_a_large_upload_replaces_the_document_of_its_name(api):
    old = await upload(api, "hours.md", b"# Opening hours\n\nWe open at 8 am.", "text/markdown")
    response = await upload(api, "hours.md", HOURS, "text/markdown")
    done = await wait_for(api, response.headers["location"], "done", "failed")
    assert [d["id"] for d in done["document"]["replaced"]] == [old.json()["id"]]
    listed = (await api.get("/documents")).json()["documents"]
    assert [d["id"] for d in listed] == [done["document"]["id"]]


async def test_a_file_that_cannot_be_read_fails_its_job_with_the_problem(
    api, service, database_url
):
    broken = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog" + b" " * 3000
    response = await upload(api, "broken.pdf", broken, "application/pdf")
    assert response.status_code == 202, response.text
    failed = await wait_for(api, response.headers["location"], "done", "failed")
    assert failed["status"] == "failed" and failed["document"] is None
    problem = failed["problem"]
    assert (problem["status"], problem["field"]) == (422, "file")
    assert "not a readable PDF" in problem["detail"]
    assert count_rows(database_url) == (0, 0)
    assert uploads(service) == []


async def test_what_is_checked_at_once_is_still_refused_at_once(api, database_url):
    assert_problem(await upload(api, "logo.png", b"\x89PNG" + b"\x00" * 3000, "image/png"), 415)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM document_jobs").fetchone()[0] == 0


class TestAJobIsHeldToTheReadingBound:
    @pytest.fixture
    def settings_overrides(self):
        return {"ingest_job_bytes": 2000, "max_document_read_seconds": 0.2}

    async def test_a_file_that_takes_too_long_to_read_fails_its_job_with_413(
        self, api, database_url
    ):
        from tests.io.test_document_bounds import html_page

        response = await upload(api, "site.html", html_page(200_000), "text/html")
        failed = await wait_for(api, response.headers["location"], "done", "failed")
        assert failed["status"] == "failed"
        assert failed["problem"]["status"] == 413
        assert "MAX_DOCUMENT_READ_SECONDS" in failed["problem"]["detail"]
        assert count_rows(database_url) == (0, 0)


@pytest.mark.parametrize("bad", ["99", "abc", "0"])
async def test_an_unknown_job_is_404(api, bad):
    assert_problem(await api.get(f"/documents/jobs/{bad}"), 404, "INGEST_JOB_BYTES")


class SlowEmbedder:
    """An embedding provider that answers at once (unit vectors) but holds its second
    batch until ``release`` is set: the test sees the job midway."""

    def __init__(self, real):
        self.name, self.space = real.name, real.space
        self.calls = 0
        self.release = trio.Event()

    async def embed(self, texts, purpose):
        self.calls += 1
        if self.calls == 2:
            await self.release.wait()
        one = 1 / math.sqrt(self.space.dimensions)
        return [[one] * self.space.dimensions for _ in texts]


LONG = "\n\n".join(
    f"# Topic {i}\n\nFacts about topic number {i} of the shop." for i in range(EMBED_BATCH + 40)
).encode()


async def test_progress_counts_the_chunks_embedded_of_the_total(api, service):
    service.embedder = slow = SlowEmbedder(service.embedder)
    response = await upload(api, "long.md", LONG, "text/markdown")
    location = response.headers["location"]
    with trio.fail_after(60):
        while (job := (await api.get(location)).json())["chunks_done"] < EMBED_BATCH:
            await trio.sleep(0.05)
    assert job["status"] == "running"
    assert (job["chunks_done"], job["chunks_total"]) == (EMBED_BATCH, EMBED_BATCH + 40)
    slow.release.set()
    done = await wait_for(api, location, "done", "failed")
    assert (done["status"], done["chunks_done"]) == ("done", EMBED_BATCH + 40)


async def test_a_job_the_service_stops_under_fails_saying_so(service, nursery, database_url):
    service.embedder = SlowEmbedder(service.embedder)  # never released
    base_url, stop = await serve_service(service, nursery)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as api:
        response = await upload(api, "long.md", LONG, "text/markdown")
        location = response.headers["location"]
        with trio.fail_after(60):
            while (await api.get(location)).json()["status"] != "running":
                await trio.sleep(0.05)
    stop.set()
    with trio.fail_after(30):
        while True:
            with psycopg.connect(database_url) as conn:
                status, problem = conn.execute(
                    "SELECT status, problem FROM document_jobs"
                ).fetchone()
            if status != "running":
                break
            await trio.sleep(0.05)
    assert status == "failed"
    assert "stopped before the job finished" in problem["detail"]
    assert count_rows(database_url) == (0, 0)
    assert uploads(service) == []


async def test_a_job_a_stopped_process_left_running_is_failed_at_start(
    service, nursery, database_url
):
    with psycopg.connect(database_url) as conn:
        [(left,)] = conn.execute(
            """INSERT INTO document_jobs (status, name, format, size_bytes, heartbeat_at)
               VALUES ('running', 'big.pdf', 'pdf', 5000000, now() - interval '10 minutes')
               RETURNING id"""
        ).fetchall()
        [(fresh,)] = conn.execute(  # another live process's, it seems: left alone
            """INSERT INTO document_jobs (status, name, format, size_bytes)
               VALUES ('queued', 'other.pdf', 'pdf', 5000000) RETURNING id"""
        ).fetchall()
    folder = Path(service.settings.data_dir) / "uploads"
    folder.mkdir(parents=True)
    (folder / str(left)).write_bytes(b"%PDF-1.4 left behind")
    (folder / str(fresh)).write_bytes(b"%PDF-1.4 still waiting")

    base_url, stop = await serve_service(service, nursery)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as api:
        job = (await api.get(f"/documents/jobs/{left}")).json()
        assert job["status"] == "failed"
        assert "the service stopped while the job was running" in job["problem"]["detail"]
        assert "upload the file again" in job["problem"]["detail"]
        assert (await api.get(f"/documents/jobs/{fresh}")).json()["status"] == "queued"
    stop.set()
    assert uploads(service) == [str(fresh)]


async def test_a_job_whose_process_went_quiet_is_failed_when_polled(api, database_url):
    with psycopg.connect(database_url) as conn:
        [(quiet,)] = conn.execute(
            """INSERT INTO document_jobs (status, name, format, size_bytes, heartbeat_at)
               VALUES ('queued', 'big.pdf', 'pdf', 5000000, now() - interval '2 minutes')
               RETURNING id"""
        ).fetchall()
    job = (await api.get(f"/documents/jobs/{quiet}")).json()
    assert job["status"] == "failed"
    assert "while the job was waiting to run" in job["problem"]["detail"]
