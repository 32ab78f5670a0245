"""A graceful stop with a call in progress: the caller hears the sentence under way to its
end, then the closing words, and is hung up; a new call meanwhile is refused (503); the
voice server returns once no call is left, so the process exits well within
SHUTDOWN_GRACE_SECONDS. In this process (``service.stopping`` set, as SIGTERM does) and
as ``ragchat voice`` sent SIGTERM.

The fake speech provider says each text as a short tone of its own (``synthesized``), so
what the caller heard is compared byte for byte with what each text sounds like, and the
calls last a couple of seconds: nothing here depends on the pace of the audio (no voice
activity, no transcription), so these run with the other tests, not among the real-time
ones.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import numpy as np
import psycopg
import pytest
import trio

from ragcore.voice.call import SHUTDOWN_REASON, SHUTTING_DOWN
from ragio.service import Service
from tests.io import audio
from tests.io import test_voice_calls as calls
from tests.io.fakes.deepgram_server import FakeDeepgram
from tests.io.fakes.phone import HandshakeError
from tests.io.processes import RAGCHAT, clean_environ
from tests.io.test_metrics import scrape, value
from tests.io.test_voice_calls import GREETING, SPEECH_KEY, TOKEN, call
from voiceio.server import VoiceServer, serve_voice

REFUSED = "ragchat_voice_calls_refused_total"
# test_voice_calls' fixtures, registered here under their own names
settings_overrides = calls.settings_overrides
speech = calls.speech
stream_url = calls.stream_url
voice_settings = calls.voice_settings


def synthesized(text: str) -> bytes:
    """What the fake speech provider says for ``text``: a tone of a pitch of its own, the
    greeting a second long (time to stop the service while it plays), anything else
    0.6 s; whole 20 ms frames, so nothing is padded on the way."""
    seconds = 1.0 if text == GREETING else 0.6
    pitch = 300 + int(hashlib.sha256(text.encode()).hexdigest(), 16) % 600
    t = np.arange(int(seconds * audio.SAMPLE_RATE)) / audio.SAMPLE_RATE
    return audio.pcm16_to_mulaw(np.round(8000 * np.sin(2 * np.pi * pitch * t)))


@attrs.define
class Running:
    server: VoiceServer
    returned: trio.Event = attrs.field(factory=trio.Event)
    returned_at: float = 0.0


@pytest.fixture
async def voice(service: Service, nursery: trio.Nursery) -> AsyncIterator[Running]:
    """serve_voice on the service, noting when it returns."""
    running = Running(VoiceServer(service))

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await serve_voice(service, server=running.server, task_status=task_status)
        running.returned_at = trio.current_time()
        running.returned.set()

    await nursery.start(serve)
    yield running


async def test_a_call_when_the_service_stops_hears_its_sentence_end_then_goodbye_and_is_hung_up(
    voice: Running,
    speech: FakeDeepgram,
    service: Service,
    api: httpx.AsyncClient,
    stream_url: str,
) -> None:
    speech.synthesizer = synthesized
    before = await scrape(api)
    async with call(stream_url) as phone:
        await phone.wait_for_audio(10)  # the greeting has begun
        speech.first_byte_delay = 1.0  # the closing words take a moment to come
        service.stopping.set()  # as SIGTERM does
        with pytest.raises(HandshakeError) as refused:  # a new call meanwhile
            async with call(stream_url, call_sid="CA" + "2" * 32):
                pass
        with trio.fail_after(15):
            await phone.ended.wait()
        hung_up_at = trio.current_time()
        assert (phone.close_code, phone.violations) == (1000, [])
    with trio.fail_after(5):
        await voice.returned.wait()

    assert getattr(refused.value, "status_code", None) == 503
    assert getattr(refused.value, "body", b"") == b"the service is shutting down\n"
    # the greeting was heard to its end, then the closing words whole: nothing cleared
    assert phone.played_audio == synthesized(GREETING) + synthesized(SHUTTING_DOWN)
    assert phone.messages("clear") == []
    assert [s.text for s in speech.spoken] == [GREETING, SHUTTING_DOWN]
    # the server returned once the call was over, not at the end of the grace
    assert voice.returned_at - hung_up_at < 1.0
    assert voice.server.calls == 0
    response = await api.get("/voice/calls")
    [recorded] = response.json()["calls"]
    assert recorded["end_reason"] == SHUTDOWN_REASON and recorded["ended_at"]
    shutting_down = {"reason": "shutting_down"}
    after = await scrape(api)
    assert value(after, REFUSED, **shutting_down) - value(before, REFUSED, **shutting_down) == 1


async def test_ragchat_voice_sent_sigterm_mid_call_closes_the_call_politely_and_exits_0(
    speech: FakeDeepgram, stream_url: str, database_url: str, tmp_path: Path
) -> None:
    speech.synthesizer = synthesized
    settings = {
        "database_url": database_url,
        "data_dir": tmp_path / "data",
        "voiceai_api_key": SPEECH_KEY,
        "voiceai_base_url": speech.base_url,
        "telco_auth_token": TOKEN,
        "voice_port": stream_url.rsplit(":", 1)[1],
        "voice_public_url": stream_url,
        "voice_greeting": GREETING,
        "llm_provider": "extractive",
        "shutdown_grace_seconds": 20,
    }
    output = bytearray()
    process = await trio.lowlevel.open_process(
        [*RAGCHAT, "voice"],
        cwd=tmp_path,
        env=clean_environ(**settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(read_all, process.stdout, output))
            with trio.fail_after(60):
                while b"ragchat voice listening on" not in output:
                    assert process.poll() is None, output.decode()
                    await trio.sleep(0.05)
            async with call(stream_url) as phone:
                await phone.wait_for_audio(10)
                process.send_signal(signal.SIGTERM)
                stopped_at = trio.current_time()
                with trio.fail_after(15):
                    await phone.ended.wait()
            with trio.fail_after(10):
                code = await process.wait()
            exited_after = trio.current_time() - stopped_at
    finally:
        if process.poll() is None:
            process.kill()
            await process.wait()

    assert code == 0, output.decode()
    assert exited_after < 10, output.decode()  # the grace is 20 s: it did not wait for it
    assert phone.close_code == 1000
    assert phone.played_audio == synthesized(GREETING) + synthesized(SHUTTING_DOWN)
    with psycopg.connect(database_url) as db:
        rows = db.execute("SELECT end_reason FROM voice_calls").fetchall()
    assert rows == [(SHUTDOWN_REASON,)]


async def read_all(stream: Any, into: bytearray) -> None:
    while chunk := await stream.receive_some():
        into += chunk
