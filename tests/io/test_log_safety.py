"""What a client can make `ragchat serve` write in its log, read back from the log of the
real process: no line it could forge (a request path with a newline, a NUL, a Unicode
line separator), in the text format and in JSON."""

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
import trio

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
    [access] = [r for r in records if "FORGED" in r.get("path", "")]
    assert access["status"] == 401
    assert access["path"].startswith("/nothing\n" + FORGED)
    assert access["path"].endswith("\x00\r\u2028\x85end")  # the path as sent, in the JSON
    assert "\x00" not in text and "\u2028" not in text and "\x85" not in text
