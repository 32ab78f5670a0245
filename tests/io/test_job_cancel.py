"""DELETE /jobs/{id}: a queued job is cancelled at once and never runs; a running one
stops between two batches, nothing of its document stored; an ended one is 409. Through
the real app on the embedded PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest
import trio

from ragcore.jobs import POLL_SECONDS
from ragcore.knowledge.documents import EMBED_BATCH
from ragio.http.problems import problem_for
from ragio.jobs import store
from ragio.jobs.waiting import wait_for_job
from ragio.jobs.worker import Worker
from ragio.registry import JOB_KINDS
from tests.io.test_document_jobs import (
    HOURS,
    SlowEmbedder,
    job_row,
    kept_files,
    left_running,
    wait_for,
)
from tests.io.test_documents import upload
from tests.io.test_http_errors import assert_problem, count_rows

#: a document of three embedding batches
THREE_BATCHES = "\n\n".join(
    f"# Topic {i}\n\nFacts about topic number {i} of the shop." for i in range(2 * EMBED_BATCH + 40)
).encode()


@pytest.fixture
def settings_overrides():
    return {"ingest_job_bytes": 2000}


async def test_a_running_ingestion_cancelled_stops_between_batches_and_stores_nothing(
    api, service, database_url
):
    service.embedder = slow = SlowEmbedder(service.embedder)  # holds its second batch
    response = await upload(api, "long.md", THREE_BATCHES, "text/markdown")
    job_id = response.json()["id"]
    with trio.fail_after(60):
        while (await api.get(f"/jobs/{job_id}")).json()["progress_done"] < EMBED_BATCH:
            await trio.sleep(0.05)

    cancelling = await api.delete(f"/jobs/{job_id}")
    assert cancelling.status_code == 202, cancelling.text
    asked = cancelling.json()
    assert (asked["id"], asked["status"]) == (job_id, "running")  # it stops at its next stop
    assert asked["cancel_requested_at"] is not None
    again = await api.delete(f"/jobs/{job_id}")  # asking again changes nothing
    assert again.status_code == 202
    assert again.json()["cancel_requested_at"] == asked["cancel_requested_at"]

    slow.release.set()  # the second batch comes back; the third is never asked for
    job = await wait_for(api, f"/jobs/{job_id}", "done", "failed", "cancelled")
    assert job["status"] == "cancelled", job
    assert slow.calls == 2
    assert job["result"]["stopped"] == "between batches"
    assert (job["result"]["chunks_embedded"], job["result"]["chunks_total"]) == (
        2 * EMBED_BATCH,
        2 * EMBED_BATCH + 40,
    )
    assert job["result"]["document"] is None and job["finished_at"]
    assert count_rows(database_url) == (0, 0)  # nothing half-stored
    assert kept_files(database_url) == 0

    upload_job = (await api.get(f"/documents/jobs/{job_id}")).json()
    assert (upload_job["status"], upload_job["document"]) == ("cancelled", None)
    listed = (await api.get("/jobs", params={"status": "cancelled"})).json()
    assert [j["id"] for j in listed["jobs"]] == [job_id]
    assert (await api.get("/documents")).json()["documents"] == []

    assert_problem(await api.delete(f"/jobs/{job_id}"), 409, "is cancelled already")


class TestAQueuedJob:
    @pytest.fixture
    def settings_overrides(self):
        return {"ingest_job_bytes": 2000, "run_jobs": False}  # nothing claims it meanwhile

    async def test_is_cancelled_at_once_never_runs_and_its_waiter_sees_it_end(
        self, api, service, nursery, database_url
    ):
        response = await upload(api, "hours.md", HOURS, "text/markdown")
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        queued = await service.database.run(store.get_job, job_id)
        assert queued is not None and queued.status == "queued"

        heard: list[store.Job] = []

        async def waiting() -> None:
            heard.append(await wait_for_job(service.database, queued, 30))

        nursery.start_soon(waiting)
        await trio.sleep(0.3)  # the waiter listens
        cancelled = await api.delete(f"/jobs/{job_id}")
        assert cancelled.status_code == 200, cancelled.text
        job = cancelled.json()
        assert (job["status"], job["attempts"], job["started_at"]) == ("cancelled", 0, None)
        assert job["result"] == {"stopped": "before it started"}
        assert job["finished_at"] and job["cancel_requested_at"]
        assert kept_files(database_url) == 0
        with trio.fail_after(10):
            while not heard:
                await trio.sleep(0.05)
        assert heard[0].status == "cancelled"  # the waiter heard it end

        worker = Worker(service, JOB_KINDS, problem_for)  # a process that runs jobs
        async with trio.open_nursery() as running:
            await running.start(worker.run)
            worker.poke()
            await trio.sleep(POLL_SECONDS + 0.5)
            worker.stop()
        row = job_row(database_url, job_id)
        assert (row["status"], row["attempts"], row["started_at"]) == ("cancelled", 0, None)
        assert count_rows(database_url) == (0, 0)
        assert (await api.get(f"/documents/jobs/{job_id}")).json()["status"] == "cancelled"

        assert_problem(await api.delete(f"/jobs/{job_id}"), 409, "is cancelled already")


async def test_a_job_that_is_done_cannot_be_cancelled(api, database_url):
    response = await upload(api, "hours.md", HOURS, "text/markdown")
    done = await wait_for(api, response.headers["location"], "done", "failed")
    assert done["status"] == "done", done["problem"]
    problem = assert_problem(await api.delete(f"/jobs/{done['id']}"), 409, "is done already")
    assert "queued or running" in problem["detail"]
    assert count_rows(database_url)[0] == 1  # the document stays


@pytest.mark.parametrize("bad", ["99", "abc", "0"])
async def test_cancelling_an_unknown_job_is_404(api, bad):
    assert_problem(await api.delete(f"/jobs/{bad}"), 404, "GET /jobs lists them")


KEY = "cancel-key-5e0c2a"


@pytest.mark.parametrize("settings_overrides", [{"ingest_job_bytes": 2000, "service_api_key": KEY}])
async def test_cancelling_needs_the_key_as_the_other_job_routes(api):
    response = await upload(api, "hours.md", HOURS, "text/markdown")
    assert_problem(response, 401)
    assert_problem(await api.delete("/jobs/1"), 401)
    keyed = await api.delete("/jobs/1", headers={"X-API-Key": KEY})
    assert_problem(keyed, 404)


async def test_a_sync_cancelled_between_pages_keeps_the_pages_stored_before(
    database_url, tmp_path, nursery, serve_fake
):
    """A sync of a slow paginated API (a second a page), cancelled once its first page
    is stored: the next page is not stored, the first stays, nothing is removed."""
    from tests.io.test_integrations_api import counts, syncing_a_slow_api

    async with syncing_a_slow_api(database_url, tmp_path, nursery, serve_fake, 1500) as (
        api,
        url,
    ):
        with trio.fail_after(30):
            while (await api.get(url)).json()["sync"]["records_stored"] == 0:
                await trio.sleep(0.05)
        [job] = (await api.get("/jobs", params={"kind": "sync"})).json()["jobs"]
        assert (await api.delete(f"/jobs/{job['id']}")).status_code == 202

        ended = await wait_for(api, f"/jobs/{job['id']}", "done", "failed", "cancelled")
        assert ended["status"] == "cancelled", ended
        assert ended["result"] == {
            "stopped": "between batches",
            "status": "partial",
            "records_seen": 500,
            "records_stored": 500,
            "records_skipped": 0,
        }
        sync = (await api.get(url)).json()["sync"]
        assert (sync["status"], sync["records_stored"]) == ("partial", 500)
        assert sync["error"].startswith("cancelled (DELETE /jobs/{id}) after 500 records")
        assert counts(database_url) == (1, 500)  # the first page stays, whole
        assert (await api.post(f"{url}/sync")).status_code == 202  # the source is free


async def test_a_job_asked_to_stop_whose_process_went_quiet_is_cancelled_not_resumed(
    api, database_url
):
    """Another replica ran the job and was asked to stop, then crashed: the process that
    finds it stale cancels it instead of running it again."""
    left = left_running(database_url, HOURS, heartbeat="10 minutes")
    with psycopg.connect(database_url) as conn:
        conn.execute("UPDATE jobs SET cancel_requested_at = now() WHERE id = %s", (left,))
    job = await wait_for(api, f"/jobs/{left}", "done", "failed", "cancelled")
    assert (job["status"], job["attempts"]) == ("cancelled", 1)
    assert job["result"] == {"stopped": "as its process went quiet"}
    assert count_rows(database_url) == (0, 0) and kept_files(database_url) == 0


async def test_a_running_job_of_another_process_is_asked_through_its_row(api, database_url):
    alive = left_running(database_url, HOURS, heartbeat="1 second")  # a live replica's
    response = await api.delete(f"/jobs/{alive}")
    assert response.status_code == 202, response.text
    row = job_row(database_url, alive)
    assert (row["status"], row["claimed_by"]) == ("running", "other:1:x")
    assert row["cancel_requested_at"] is not None  # what that process reads between batches
