"""LOG_FORMAT=json: `ragchat serve` run as a user runs it, every line it logs read back as
a log shipper would, one JSON object a line; and no key configured or sent in it."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import time
from datetime import datetime
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragio.logs import JsonFormatter
from tests.io.processes import RAGCHAT, clean_environ, free_port

KEY = "svc-key-3f9a1c7e5b2d4a60"
SECRETS = {
    "SERVICE_API_KEY": KEY,
    "GENAI_API_KEY": "AIzaSy-genai-secret-8c1f2e",
    "OPENAI_API_KEY": "sk-openai-secret-77d0b3",
    "TELEGRAM_BOT_TOKEN": "123456:AAEtelegramSecret0d9f8e7",
    "ADDON_ENCRYPTION_KEY": "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
}
WRONG_KEY = "a-wrong-key-a-client-sent-9e2b"
FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."


def serve_and_stop(tmp_path: Path, database_url: str, requests: Any) -> list[str]:
    """Run `ragchat serve` with LOG_FORMAT=json and the keys set, make ``requests(client)``,
    stop it with SIGTERM; its stderr's lines."""
    port = free_port()
    settings = {
        **SECRETS,
        "LOG_FORMAT": "json",
        "DATABASE_URL": database_url,
        "DATA_DIR": tmp_path / "data",
        "APP_PORT": port,
        "LLM_PROVIDER": "extractive",  # the keys are configured, never used: no network
        "EMBEDDING_PROVIDER": "local",
    }
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as errors, (tmp_path / "stdout.log").open("w") as out:
        process = subprocess.Popen(
            [*RAGCHAT, "serve"], cwd=tmp_path, env=clean_environ(**settings), stdout=out,
            stderr=errors,
        )  # fmt: skip
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                deadline = time.monotonic() + 60
                while True:
                    assert process.poll() is None, stderr.read_text()
                    assert time.monotonic() < deadline, "ragchat serve did not start"
                    try:
                        if client.get("/health").status_code == 200:
                            break
                    except httpx.TransportError:
                        time.sleep(0.1)
                requests(client)
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(30) == 0
    return stderr.read_text(encoding="utf-8").splitlines()


def test_every_line_is_one_json_object_and_no_key_appears(tmp_path, database_url):
    keyed = {"X-API-Key": KEY}

    def requests(client: httpx.Client) -> None:
        assert client.get("/documents", headers=keyed).status_code == 200
        assert client.get("/documents", headers={"X-API-Key": WRONG_KEY}).status_code == 401
        added = client.post(
            "/documents?token=abc", json={"name": "faq.md", "text": FAQ}, headers=keyed
        )
        assert added.status_code == 201, added.text
        question = {"question": "When does the shop open?"}
        assert client.post("/chat", json=question, headers=keyed).status_code == 200
        assert client.get("/nothing-here", headers=keyed).status_code == 404

    lines = serve_and_stop(tmp_path, database_url, requests)

    assert lines, "serve logged nothing"
    records = [json.loads(line) for line in lines]  # each line parses, alone
    for record in records:
        assert isinstance(record, dict)
        assert {"time", "level", "logger", "message"} <= record.keys(), record
        assert record["time"].endswith("Z")
        assert datetime.fromisoformat(record["time"]).utcoffset().total_seconds() == 0
        assert record["level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    messages = [r["message"] for r in records]
    assert any(m.startswith("serving on http://127.0.0.1:") for m in messages)
    assert any(m.startswith("received SIGTERM, shutting down") for m in messages)

    access = [r for r in records if r["logger"] == "hypercorn.access" and "status" in r]
    seen = {(r["method"], r["path"], r["status"]) for r in access}
    assert {
        ("GET", "/health", 200),
        ("GET", "/documents", 200),
        ("GET", "/documents", 401),
        ("POST", "/documents", 201),
        ("POST", "/chat", 200),
        ("GET", "/nothing-here", 404),
    } <= seen
    for record in access:
        assert record["client"].startswith("127.0.0.1:")
        assert isinstance(record["duration_ms"], float) and record["duration_ms"] >= 0
        assert "user_agent" in record
    assert not any("token=abc" in r["path"] for r in access)  # no query string

    text = "\n".join(lines)
    for name, secret in {**SECRETS, "wrong X-API-Key sent": WRONG_KEY}.items():
        assert secret not in text, f"{name} appears in the logs"


def test_an_exception_is_logged_with_its_traceback_in_the_same_line():
    stream = StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.json_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            {}["missing"]
        except KeyError:
            logger.exception("unhandled error on %s %s", "POST", "/chat", extra={"request_id": 7})
    finally:
        logger.removeHandler(handler)
    [line] = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["level"] == "ERROR" and record["logger"] == "tests.json_logs"
    assert record["message"] == "unhandled error on POST /chat"
    assert record["exception"].startswith("Traceback (most recent call last):")
    assert "KeyError: 'missing'" in record["exception"]
    assert record["request_id"] == 7


def test_a_python_warning_becomes_a_json_line_too():
    import warnings

    from ragio.logs import use_format

    stream = StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    kept = [(h, h.formatter) for h in root.handlers]  # pytest's own handlers among them
    try:
        use_format("json")  # every handler of the root logger, this one included
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("this call is deprecated", DeprecationWarning, stacklevel=1)
    finally:
        logging.captureWarnings(False)
        for kept_handler, kept_formatter in kept:
            kept_handler.setFormatter(kept_formatter)
        root.removeHandler(handler)
    [line] = stream.getvalue().splitlines()
    record = json.loads(line)
    assert (record["level"], record["logger"]) == ("WARNING", "py.warnings")
    assert "DeprecationWarning: this call is deprecated" in record["message"]


@pytest.mark.parametrize("value", ["xml", "JSONL"])
def test_an_unknown_log_format_stops_the_start_naming_the_choices(tmp_path, value):
    from tests.io.processes import run_cli

    result = run_cli("migrate", cwd=tmp_path, log_format=value, data_dir=tmp_path / "data")
    assert result.returncode == 2
    assert "LOG_FORMAT: unknown" in result.stderr and "choose one of text, json" in result.stderr
