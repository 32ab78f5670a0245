"""Uploads larger than INGEST_JOB_BYTES: 202 and a job the client polls, through the real
app on the embedded PostgreSQL."""

from __future__ import annotations

import math

import httpx
import psycopg
import pytest
import trio

from ragcore.api.problems import ProblemError
from ragcore.jobs import FIRST_BACKOFF, POLL_SECONDS
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


def kept_files(database_url: str) -> int:
    """The uploads' files kept in the database (until their job ends)."""
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT count(*) FROM job_files").fetchone()[0]


async def test_a_large_upload_is_a_job_the_client_polls_until_the_document_is_stored(
    api, database_url
):
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
    assert kept_files(database_url) == 0  # the file was kept only until it was ingested

    listed = (await api.get("/documents")).json()["documents"]
    assert [d["id"] for d in listed] == [document["id"]]
    answer = await ask(api, "When do you open on Saturdays?")
    assert "10 am" in answer["answer"]
    assert answer["citations"][0]["document_name"] == "hours.md"


async def test_a_small_upload_is_still_answered_at_once(api):
    response = await upload(api, "short.txt", b"We open at 9 am.", "text/plain")
    assert response.status_code == 201, response.text


async def test_a_large_upload_replaces_the_document_of_its_name_when_asked(api):
    old = await upload(api, "hours.md", b"# Opening hours\n\nWe open at 8 am.", "text/markdown")
    refused = await upload(api, "hours.md", HOURS, "text/markdown")
    failed = await wait_for(api, refused.headers["location"], "done", "failed")
    assert failed["status"] == "failed" and failed["document"] is None
    assert failed["problem"]["status"] == 409
    assert failed["problem"]["existing_id"] == old.json()["id"]
    response = await upload(api, "hours.md", HOURS, "text/markdown", replace="true")
    done = await wait_for(api, response.headers["location"], "done", "failed")
    assert [d["id"] for d in done["document"]["replaced"]] == [old.json()["id"]]
    listed = (await api.get("/documents")).json()["documents"]
    assert [d["id"] for d in listed] == [done["document"]["id"]]


async def test_a_file_that_cannot_be_read_fails_its_job_with_the_problem(api, database_url):
    broken = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog" + b" " * 3000
    response = await upload(api, "broken.pdf", broken, "application/pdf")
    assert response.status_code == 202, response.text
    failed = await wait_for(api, response.headers["location"], "done", "failed")
    assert failed["status"] == "failed" and failed["document"] is None
    problem = failed["problem"]
    assert (problem["status"], problem["field"]) == (422, "file")
    assert "not a readable PDF" in problem["detail"]
    assert count_rows(database_url) == (0, 0)
    assert kept_files(database_url) == 0
    job = (await api.get(f"/jobs/{failed['id']}")).json()
    assert (job["kind"], job["status"], job["attempts"]) == ("ingest", "failed", 1)  # not retried


async def test_what_is_checked_at_once_is_still_refused_at_once(api, database_url):
    assert_problem(
        await upload(api, "clip.mp4", b"\x00\x00\x00\x18ftyp" + b"\x00" * 3000, "video/mp4"), 415
    )
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


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


class TestAJobTheServiceStopsUnderIsHandedBack:
    @pytest.fixture
    def settings_overrides(self):
        return {"ingest_job_bytes": 2000, "shutdown_grace_seconds": 0.5}

    async def test_and_the_next_process_finishes_it(self, service, nursery, database_url):
        service.embedder = slow = SlowEmbedder(service.embedder)  # held until released
        base_url, stop = await serve_service(service, nursery)
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as api:
            response = await upload(api, "long.md", LONG, "text/markdown")
            location = response.headers["location"]
            with trio.fail_after(60):
                while (await api.get(location)).json()["status"] != "running":
                    await trio.sleep(0.05)
        stop.set()  # the grace period passes with the job still embedding
        with trio.fail_after(30):
            while job_row(database_url)["status"] == "running":
                await trio.sleep(0.05)
        row = job_row(database_url)
        assert (row["status"], row["attempts"], row["claimed_by"]) == ("queued", 0, None)
        assert kept_files(database_url) == 1 and count_rows(database_url) == (0, 0)

        slow.release.set()
        base_url, stop = await serve_service(service, nursery)  # the next process
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as api:
            done = await wait_for(api, location, "done", "failed")
        stop.set()
        assert done["status"] == "done", done["problem"]
        assert done["document"]["chunk_count"] == EMBED_BATCH + 40
        assert kept_files(database_url) == 0


def job_row(database_url: str, job_id: int | None = None) -> dict:
    with psycopg.connect(database_url) as conn:
        cursor = conn.execute(
            "SELECT * FROM jobs WHERE %s::bigint IS NULL OR id = %s ORDER BY id LIMIT 1",
            (job_id, job_id),
        )
        names = [column.name for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))


def left_running(database_url: str, data: bytes, *, heartbeat: str, attempts: int = 1) -> int:
    """An ingestion job a process (``other:1:x``) holds, its heartbeat ``heartbeat`` ago."""
    payload = {"name": "hours.md", "format": "markdown", "charset": None, "size_bytes": len(data)}
    with psycopg.connect(database_url) as conn:
        [(job_id,)] = conn.execute(
            """INSERT INTO jobs (kind, status, payload, attempts, max_attempts, claimed_by,
                                 started_at, heartbeat_at)
               VALUES ('ingest', 'running', %s, %s, 3, 'other:1:x', now(),
                       now() - %s::interval)
               RETURNING id""",
            (psycopg.types.json.Jsonb(payload), attempts, heartbeat),
        ).fetchall()
        conn.execute("INSERT INTO job_files (job_id, data) VALUES (%s, %s)", (job_id, data))
    return job_id


async def test_a_job_a_crashed_process_left_running_is_resumed_by_another(
    service, nursery, database_url
):
    left = left_running(database_url, HOURS, heartbeat="10 minutes")
    alive = left_running(database_url, HOURS, heartbeat="1 second")  # a live process's
    base_url, stop = await serve_service(service, nursery)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as api:
        done = await wait_for(api, f"/documents/jobs/{left}", "done", "failed")
        assert done["status"] == "done", done["problem"]
        assert "10 am" in (await ask(api, "When do you open on Saturdays?"))["answer"]
        job = (await api.get(f"/jobs/{left}")).json()
        assert job["attempts"] == 2 and job["process"] != "other:1:x"
        other = (await api.get(f"/jobs/{alive}")).json()  # left to the process holding it
        assert (other["status"], other["process"]) == ("running", "other:1:x")
    stop.set()


async def test_a_job_whose_last_attempt_was_cut_off_fails_saying_why(
    service, nursery, database_url
):
    left = left_running(database_url, HOURS, heartbeat="10 minutes", attempts=3)
    base_url, stop = await serve_service(service, nursery)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as api:
        failed = await wait_for(api, f"/documents/jobs/{left}", "done", "failed")
    stop.set()
    assert failed["status"] == "failed"
    assert "other:1:x" in failed["problem"]["detail"]
    assert "showed no sign of life" in failed["problem"]["detail"]
    assert kept_files(database_url) == 0 and count_rows(database_url) == (0, 0)


class FlakyEmbedder:
    """An embedding provider down for its first call, then answering (unit vectors)."""

    def __init__(self, real):
        self.name, self.space = real.name, real.space
        self.calls = 0

    async def embed(self, texts, purpose):
        self.calls += 1
        if self.calls == 1:
            raise ProblemError(503, "the embedding provider did not answer")
        one = 1 / math.sqrt(self.space.dimensions)
        return [[one] * self.space.dimensions for _ in texts]


async def test_a_failure_that_may_pass_is_retried_after_its_backoff(api, service, fake_clock):
    service.embedder = FlakyEmbedder(service.embedder)
    response = await upload(api, "hours.md", HOURS, "text/markdown")
    job_id = response.json()["id"]
    with trio.fail_after(30):
        while (job := (await api.get(f"/jobs/{job_id}")).json())["problem"] is None:
            await trio.sleep(0.05)
    assert (job["status"], job["attempts"], job["process"]) == ("queued", 1, None)
    assert job["problem"]["status"] == 503
    assert job["run_after"] == (fake_clock.now() + FIRST_BACKOFF).isoformat()
    await trio.sleep(POLL_SECONDS + 0.5)  # not due yet: left queued
    assert (await api.get(f"/jobs/{job_id}")).json()["status"] == "queued"

    fake_clock.advance(FIRST_BACKOFF)
    done = await wait_for(api, response.headers["location"], "done", "failed")
    assert done["status"] == "done" and done["problem"] is None
    job = (await api.get(f"/jobs/{job_id}")).json()
    assert (job["attempts"], job["problem"]) == (2, None)
