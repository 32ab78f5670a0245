"""Schemathesis fuzzes the real service, served by Hypercorn on 127.0.0.1, from the
/openapi.json it serves: every operation, a bounded number of cases each, the same cases
every run. No answer may be a 5xx, every answer must be one the document declares, and
the document must tell the truth about what the service takes: a request the schema
admits is never refused as malformed (400, 415, 422), and a request it does not admit
is never taken.

Schemathesis runs as its own process against the live URL: its in-process ASGI client
is asyncio's, and the app is Quart-Trio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import httpx
import pytest
import trio

ST = Path(sys.executable).parent / "st"
HOOKS = Path(__file__).with_name("fuzzing_hooks.py")  # they read the rules from ragcore
SRC = Path(__file__).resolve().parents[2] / "src"
KEY = "fuzzing-key"
MAX_EXAMPLES = 3  # per operation in the fuzzing phase (the coverage phase's are its own)
SEED = 20261124  # the same cases every run; change it to explore others
CSV = "email,plan\na@x.io,pro\n"
TEMPLATE = "email = {email}"  # a search, the template a csv source takes


@pytest.fixture
def settings_overrides():
    # a key, so data sources can be created (a CSV's content is fuzzed like any field);
    # a webhook target and workflow URLs on loopback, where nothing listens
    return {
        "service_api_key": KEY,
        "addon_encryption_key": "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
        "webhook_targets": "crm=https://127.0.0.1:9/in",
        "actions_allow_private_targets": True,
        "workflow_allow_private_targets": True,
    }


async def made(api: httpx.AsyncClient, path: str, body: dict) -> int:
    response = await api.post(path, json=body, headers={"X-API-Key": KEY})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def config(source: int, live_action: int, workflow: int) -> str:
    """What schemathesis checks, and the stored things some operations need to get past
    their 404: a request about nothing stored checks no more than its path."""
    runs_on_the_source = f'"body.source_id" = {source}, "body.template" = "{TEMPLATE}"'
    return f"""
# the coverage phase's requests in methods no route has probe the unsupported_method
# check, which is not one of these: Quart answers them 405
[phases.coverage]
unexpected-methods = []

[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
content_type_conformance.enabled = true
response_schema_conformance.enabled = true
positive_data_acceptance.enabled = true
negative_data_rejection.enabled = true

# Schemathesis reads each server-sent event of a 3.1 text/event-stream body with its data
# as a raw string; the document describes the stream as the list of its events with their
# data parsed (as OpenAPI 3.2 does), which test_chat_stream checks against real streams.
[[operations]]
include-path-regex = "^(/widget)?/chat/stream$"
checks.response_schema_conformance.enabled = false

# the live views' streams do not end unless asked to (?wait=): at once here
[[operations]]
include-path-regex = "^/(conversations|widget)/events$"
checks.response_schema_conformance.enabled = false
parameters = {{ "query.wait" = "0" }}

# a stored role, data source, live action and workflow: their bodies are read only then
[[operations]]
include-path-regex = "^/employees/\\\\{{role\\\\}}/(memory|context)$"
parameters = {{ "path.role" = "support" }}

[[operations]]
include-path-regex = "^/integrations/\\\\{{id\\\\}}/(records|test|sync)$"
parameters = {{ "path.id" = {source} }}

[[operations]]
include-path = "/integrations/{{id}}"
include-method-regex = "^(GET|PATCH)$"
parameters = {{ "path.id" = {source} }}

# a live action's template is a query in its source's language (checked against the
# source's kind, which no schema can know): the csv source's search, and that source
[[operations]]
include-path = "/live-actions"
include-method = "POST"
parameters = {{ {runs_on_the_source} }}

[[operations]]
include-path = "/live-actions/{{id}}"
include-method-regex = "^(GET|PATCH)$"
parameters = {{ "path.id" = {live_action}, {runs_on_the_source} }}

[[operations]]
include-path = "/live-actions/{{id}}/dry-run"
parameters = {{ "path.id" = {live_action} }}

[[operations]]
include-path = "/automation-workflows/{{id}}"
include-method-regex = "^(GET|PATCH)$"
parameters = {{ "path.id" = {workflow} }}

[[operations]]
include-path = "/automation-workflows/{{id}}/test"
parameters = {{ "path.id" = {workflow} }}
"""


@pytest.mark.timeout(360)  # about 110 s alone; a loaded machine doubles it
async def test_fuzzing_finds_no_server_error_and_no_schema_mismatch(api, tmp_path):
    source = await made(api, "/integrations", {"name": "crm", "source_type": "csv", "content": CSV})
    live = {"name": "plan", "source_id": source, "template": TEMPLATE}
    live_action = await made(api, "/live-actions", live)
    hook = {"name": "crm", "webhook_url": "http://127.0.0.1:9/hook", "channels": ["telegram"]}
    workflow = await made(api, "/automation-workflows", hook)
    settings = tmp_path / "schemathesis.toml"
    settings.write_text(config(source, live_action, workflow))
    command = [
        str(ST),
        "--config-file",
        str(settings),
        "run",
        str(api.base_url.join("/openapi.json")),
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--generation-database",
        "none",
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--header",
        f"X-API-Key: {KEY}",
        "--continue-on-failure",
        "--no-color",
        "--report",
        "junit",
        "--report-junit-path",
        str(tmp_path / "junit.xml"),
    ]
    result = await trio.run_process(
        command,
        capture_stdout=True,
        stderr=subprocess.STDOUT,
        check=False,
        cwd=tmp_path,
        env={
            **os.environ,
            "SCHEMATHESIS_HOOKS": str(HOOKS),
            "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        },
    )
    output = result.stdout.decode(errors="replace")
    assert result.returncode == 0, output
    spec = (await api.get("/openapi.json", headers={"X-API-Key": KEY})).json()
    operations = {
        f"{method.upper()} {path}" for path, item in spec["paths"].items() for method in item
    }
    report = ElementTree.parse(tmp_path / "junit.xml")  # noqa: S314 (schemathesis's own report)
    tested = {case.get("name") for case in report.iter("testcase")}
    # every operation was fuzzed (the document itself perhaps not: schemathesis loaded it)
    assert operations - tested <= {"GET /openapi.json"}, operations - tested
