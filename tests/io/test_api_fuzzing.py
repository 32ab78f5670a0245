"""Schemathesis fuzzes the real service, served by Hypercorn on 127.0.0.1, from the
/openapi.json it serves: every operation, the webhooks included (its requests carry no
platform signature, so they must be refused with a 4xx), a bounded number of cases
each. No answer may be a 5xx, and every answer must be one the document declares.

Schemathesis runs as its own process against the live URL: its in-process ASGI client
is asyncio's, and the app is Quart-Trio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import trio

ST = Path(sys.executable).parent / "st"
KEY = "fuzzing-key"
MAX_EXAMPLES = 6  # per operation and phase; the whole run stays under a minute here
SEED = 20261124  # the same cases every run; change it to explore others
# Schemathesis reads each server-sent event of a 3.1 text/event-stream body with its data
# as a raw string; the document describes the stream as the list of its events with their
# data parsed (as OpenAPI 3.2 does), which test_chat_stream checks against real streams.
CONFIG = """
[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
content_type_conformance.enabled = true
response_schema_conformance.enabled = true

[[operations]]
include-path = "/chat/stream"
checks.response_schema_conformance.enabled = false
"""


@pytest.fixture
def settings_overrides():
    # a key, so data sources can be created (a CSV's content is fuzzed like any field)
    return {
        "service_api_key": KEY,
        "addon_encryption_key": "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
    }


@pytest.mark.timeout(240)
async def test_fuzzing_the_served_schema_finds_no_server_error(api, tmp_path):
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [
        str(ST),
        "--config-file",
        str(config),
        "run",
        str(api.base_url.join("/openapi.json")),
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--header",
        f"X-API-Key: {KEY}",
        "--no-color",
        "--report",
        "junit",
        "--report-junit-path",
        str(tmp_path / "junit.xml"),
    ]
    result = await trio.run_process(
        command, capture_stdout=True, stderr=subprocess.STDOUT, check=False, cwd=tmp_path
    )
    output = result.stdout.decode(errors="replace")
    assert result.returncode == 0, output
    spec = (await api.get("/openapi.json", headers={"X-API-Key": KEY})).json()
    operations = {
        f"{method.upper()} {path}" for path, item in spec["paths"].items() for method in item
    }
    report = ElementTree.parse(tmp_path / "junit.xml")  # noqa: S314 (schemathesis's own report)
    tested = {case.get("name") for case in report.iter("testcase")}
    # every operation was fuzzed but the document itself, which schemathesis loaded from it
    assert operations - tested == {"GET /openapi.json"}, tested
