"""`ragchat serve` as a real process on the embedded PostgreSQL, as a newcomer runs it."""

from __future__ import annotations

import signal
import subprocess
import time

import httpx
import pytest
import trio
from trio_websocket import ConnectionRejected, open_websocket_url
from twilio.request_validator import RequestValidator

from tests.io.dictionaries import write_dictionary
from tests.io.processes import (
    RAGCHAT,
    clean_environ,
    free_port,
    postgres_processes_for,
    running_service,
)

MANUAL = (
    "# Espresso machine manual\n\n"
    "Descale the machine every 200 cups or once a month, whichever comes first. "
    "Use only the descaling liquid sold with the machine.\n"
)


def test_a_document_added_over_http_is_cited_in_the_answer(tmp_path):
    # FreeDict's format, read into the database in the background once serving
    dictionaries = tmp_path / "dictd"
    write_dictionary(
        dictionaries,
        [
            "entkalken /ɛntkˈalkən/ <v>\ndescale <v>, decalcify <v>\n",
            "Maschine /maʃˈiːnə/ <fem, n, sg>\nmachine <n>\n",
            "oft /ɔft/ <adv>\noften <adv>, frequently <adv>\n",
        ],
    )
    settings = {"data_dir": tmp_path / "data", "dictionary_dir": dictionaries}
    with running_service(tmp_path, **settings) as (_, url):
        health = httpx.get(f"{url}/health").json()
        assert health["status"] == "ok"
        assert health["mode"] == "offline"
        assert health["database"] == {"reachable": True, "embedded": True}
        assert health["providers"]["llm"]["name"] == "extractive"
        assert health["providers"]["embedding"]["name"] == "local"

        added = httpx.post(f"{url}/documents", json={"name": "manual.md", "text": MANUAL})
        assert added.status_code == 201

        reply = httpx.post(f"{url}/chat", params={"question": "How often should I descale?"})
        assert reply.status_code == 200
        body = reply.json()
        assert "every 200 cups" in body["answer"]
        assert body["citations"][0]["document_name"] == "manual.md"

        # in German, once the dictionary is in: its words found in the English manual
        for _ in range(300):
            german = httpx.post(
                f"{url}/chat", json={"question": "Wie oft soll ich die Maschine entkalken?"}
            ).json()
            if german["citations"]:
                break
            time.sleep(0.1)
        assert german["answer"].startswith("Descale the machine every 200 cups")
        assert german["language"] == "de"


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_service_stops_its_embedded_database(tmp_path, stop_signal):
    pgdata = tmp_path / "data" / "postgres"
    with running_service(tmp_path, data_dir=tmp_path / "data") as (process, _):
        assert postgres_processes_for(pgdata), "the embedded server should be running"
        process.send_signal(stop_signal)
        assert process.wait(30) in (0, 130)
    assert postgres_processes_for(pgdata) == []


def test_data_survives_a_restart(tmp_path):
    with running_service(tmp_path, data_dir=tmp_path / "data") as (_, url):
        httpx.post(f"{url}/documents", json={"name": "manual.md", "text": MANUAL})
    with running_service(tmp_path, data_dir=tmp_path / "data") as (_, url):
        documents = httpx.get(f"{url}/documents").json()["documents"]
        assert [d["name"] for d in documents] == ["manual.md"]


def test_with_an_api_key_every_route_but_health_needs_it(tmp_path):
    key = "k3y-for-tests"
    with running_service(tmp_path, data_dir=tmp_path / "data", service_api_key=key) as (_, url):
        assert httpx.get(f"{url}/health").status_code == 200

        refused = httpx.post(f"{url}/chat", params={"question": "hi?"})
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["status"] == 401
        wrong = httpx.get(f"{url}/documents", headers={"X-API-Key": "wrong"})
        assert wrong.status_code == 401
        assert key not in wrong.text

        allowed = httpx.post(f"{url}/chat", params={"question": "hi?"}, headers={"X-API-Key": key})
        assert allowed.status_code == 200
        assert httpx.get(f"{url}/documents", headers={"X-API-Key": key}).status_code == 200


def test_with_a_speech_key_serve_also_runs_the_voice_server(tmp_path):
    """Two servers, one process, one embedded database: the voice server refuses an
    unsigned media stream with 403 (it is there, and it checks), and the webhook points
    the provider at it."""
    voice_port = free_port()
    settings = {
        "data_dir": tmp_path / "data",
        "voiceai_api_key": "speech-key",
        "telco_auth_token": "telco-token",
        "voice_port": voice_port,
    }
    with running_service(tmp_path, **settings) as (_, url):
        form = {"CallSid": "CA1", "From": "+15551234567"}
        signed = RequestValidator("telco-token").compute_signature(f"{url}/webhook/voice", form)
        markup = httpx.post(
            f"{url}/webhook/voice", data=form, headers={"X-Twilio-Signature": signed}
        ).text
        assert f"ws://127.0.0.1:{voice_port}" in markup and "<Connect><Stream" in markup

        async def upgrade(signature: str) -> int | None:
            try:
                async with open_websocket_url(
                    f"ws://127.0.0.1:{voice_port}/",
                    extra_headers=[(b"X-Twilio-Signature", signature.encode())],
                ):
                    return None
            except ConnectionRejected as refused:
                return refused.status_code

        forged = RequestValidator("wrong").compute_signature(f"ws://127.0.0.1:{voice_port}", {})
        assert trio.run(upgrade, forged) == 403


def test_ragchat_voice_serves_calls_alone_on_the_apis_database(tmp_path, database_url):
    """The compose file's `voice` service: the voice server alone on DATABASE_URL, which
    checks every stream, says where it listens, and stops cleanly on SIGTERM."""
    voice_port = free_port()
    process = subprocess.Popen(
        [*RAGCHAT, "voice"],
        cwd=tmp_path,
        env=clean_environ(
            database_url=database_url,
            voiceai_api_key="speech-key",
            telco_auth_token="telco-token",
            voice_port=voice_port,
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        said = []
        while not said or "ragchat voice listening" not in said[-1]:  # the log comes first
            said.append(process.stdout.readline())
            assert said[-1], "".join(said)  # it ended before it listened
        assert f"ragchat voice listening on 127.0.0.1:{voice_port}" in said[-1]

        async def upgrade() -> int | None:
            forged = RequestValidator("wrong").compute_signature(f"ws://127.0.0.1:{voice_port}", {})
            try:
                async with open_websocket_url(
                    f"ws://127.0.0.1:{voice_port}/",
                    extra_headers=[(b"X-Twilio-Signature", forged.encode())],
                ):
                    return None
            except ConnectionRejected as refused:
                return refused.status_code

        assert trio.run(upgrade) == 403
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
