"""What a client can make `ragchat serve` write in its log, read back from the log of the
real process: no line it could forge (a request path with a newline, a NUL, a Unicode
line separator), in the text format and in JSON; and no outbound call's URL with a
customer's value in its query string (a live query to a REST API)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from cryptography.fernet import Fernet

from tests.io.fakes.rest_server import FakeRestApi
from tests.io.processes import RAGCHAT, clean_environ, free_port

KEY = "log-safety-key-5e1d0c9b8a"
#: a record's first line in the text format: ``2026-11-27 11:31:00,000 WARNING logger: ...``
RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+: ")
FORGED = "2026-11-27 11:31:00,000 WARNING ragio.security: FORGED admin login from 10.0.0.1"


@asynccontextmanager
async def serve(tmp_path: Path, database_url: str, **settings: Any) -> AsyncIterator[Any]:
    """`ragchat serve` on ``database_url`` with ``settings``; yields a client of it. Its
    stderr is at ``tmp_path / "stderr.log"`` once the block has ended (the process stopped
    by SIGTERM, exit code 0)."""
    port = free_port()
    environ = clean_environ(
        database_url=database_url,
        data_dir=tmp_path / "data",
        app_port=port,
        service_api_key=KEY,
        llm_provider="extractive",
        embedding_provider="local",
        **settings,
    )
    with (tmp_path / "stderr.log").open("wb") as errors:
        process = subprocess.Popen(
            [*RAGCHAT, "serve"], cwd=tmp_path, env=environ, stdout=subprocess.DEVNULL,
            stderr=errors,
        )  # fmt: skip
        try:
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", headers={"X-API-Key": KEY}, timeout=30
            ) as client:
                with trio.fail_after(60):
                    while True:
                        assert process.poll() is None, "ragchat serve exited"
                        try:
                            if (await client.get("/health/ready")).status_code == 200:
                                break
                        except httpx.TransportError:
                            await trio.sleep(0.1)
                yield client
        finally:
            process.send_signal(signal.SIGTERM)
            assert await trio.to_thread.run_sync(process.wait, 30) == 0


def log_of(tmp_path: Path) -> str:
    return (tmp_path / "stderr.log").read_bytes().decode("utf-8")


async def forge(client: httpx.AsyncClient) -> None:
    """The probe's request, without the key: a newline and a NUL in the path."""
    path = "/nothing%0a" + FORGED.replace(" ", "%20") + "%00%0d%e2%80%a8%c2%85end"
    response = await client.get(path, headers={"X-API-Key": ""})
    assert response.status_code == 401


async def test_a_path_with_a_newline_forges_no_line_of_the_text_log(tmp_path, database_url):
    async with serve(tmp_path, database_url) as client:
        await forge(client)
    text = log_of(tmp_path)

    assert "\x00" not in text and "\r" not in text
    assert "\u2028" not in text and "\x85" not in text
    for line in text.split("\n"):
        assert not line.startswith("2026-11-27 11:31:00,000"), line
        assert not line or RECORD_START.match(line) or line.startswith(" "), line
    # the request is still there, escaped, on its access line
    [access] = [line for line in text.split("\n") if "FORGED" in line and " 401 " in line]
    assert "hypercorn.access" in access and "/nothing\\n2026-11-27 11:31:00,000" in access
    assert "\\x00\\r\\u2028\\x85end" in access


async def test_a_path_with_line_breaks_stays_in_one_json_line(tmp_path, database_url):
    async with serve(tmp_path, database_url, log_format="json") as client:
        await forge(client)
    text = log_of(tmp_path)

    # every line one JSON object, however a reader splits lines (Python's splitlines
    # breaks at U+2028 and NEL too)
    records = [json.loads(line) for line in text.splitlines()]
    # (Hypercorn may add a second access line, status "-", for the same request)
    [access] = [r for r in records if "FORGED" in r.get("path", "") and r.get("status") == 401]
    assert access["path"].startswith("/nothing\n" + FORGED)
    assert access["path"].endswith("\x00\r\u2028\x85end")  # the path as sent, in the JSON
    assert "\x00" not in text and "\u2028" not in text and "\x85" not in text


@pytest.fixture
async def rest_api(serve_fake: Any) -> FakeRestApi:
    return await serve_fake(FakeRestApi("X-Api-Key", "rest-key-2f0e7d6c5b", items=3))


async def test_a_live_query_puts_no_customer_value_in_the_log(tmp_path, database_url, rest_api):
    """The probe saw httpx's INFO line ``GET http://…/v1/customers?email=…``."""
    settings = {
        "addon_encryption_key": Fernet.generate_key().decode(),
        "integrations_allow_http_loopback": "true",  # the fake serves http on 127.0.0.1
        "integrations_allow_private_targets": "true",  # loopback, then
    }
    async with serve(tmp_path, database_url, **settings) as client:
        source = await client.post(
            "/integrations",
            json={
                "name": "customers",
                "source_type": "rest_api",
                "base_url": rest_api.base_url,
                "auth_header": "X-Api-Key: rest-key-2f0e7d6c5b",
                "records_path": "/v1/customers",
            },
        )
        assert source.status_code == 201, source.text
        action = await client.post(
            "/live-actions",
            json={
                "name": "Customer by e-mail",
                "source_id": source.json()["id"],
                "template": "/v1/customers?email={email}",
            },
        )
        assert action.status_code == 201, action.text
        run = await client.post(
            f"/live-actions/{action.json()['id']}/dry-run",
            json={"values": {"email": "user1@example.org"}},
        )
        assert run.status_code == 200, run.text
        assert [row["id"] for row in run.json()["rows"]] == [1]
    assert rest_api.requests[-1].query["email"] == ["user1@example.org"]  # it was called
    text = log_of(tmp_path)

    assert "POST /live-actions" in text  # the access lines are there
    for value in ("user1@example.org", "user1%40example.org", "email=", "/v1/customers"):
        assert value not in text, f"{value} is in the log"


def test_an_access_lines_arguments_hold_the_request_not_the_environment(monkeypatch):
    """Hypercorn's own atoms carry every environment variable (the keys among them) in
    each access line's record, where any handler could write them out."""
    from hypercorn.logging import AccessLogAtoms

    from ragio.server import AccessAtoms

    monkeypatch.setenv("OPENAI_API_KEY", "sk-in-the-environment")
    request = {
        "type": "http",
        "http_version": "1.1",
        "client": ("127.0.0.1", 50000),
        "method": "POST",
        "path": "/chat",
        "query_string": b"a=1",
        "scheme": "http",
        "headers": [(b"user-agent", b"curl/8"), (b"referer", b"https://shop.example")],
    }
    response = {"status": 200, "headers": [(b"content-length", b"42")]}
    ours, hypercorns = AccessAtoms(request, response, 0.25), AccessLogAtoms(request, response, 0.25)

    assert "sk-in-the-environment" not in repr(ours)
    assert "sk-in-the-environment" in repr(hypercorns)  # what it would have carried
    kept = {k: v for k, v in hypercorns.items() if not k.endswith("}e") and k != "t"}
    assert {k: v for k, v in ours.items() if k != "t"} == kept
    line = '%(h)s %(l)s %(l)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(D)s'
    assert (
        line % ours
        == '127.0.0.1:50000 - - "POST /chat 1.1" 200 42 "https://shop.example" "curl/8" 250000'
    )
