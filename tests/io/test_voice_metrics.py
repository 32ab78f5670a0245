"""The voice server's calls in /metrics, when `ragchat serve` runs it in its process: a
call in progress, and a media stream refused. Real calls, as in test_voice_calls."""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from tests.io import test_voice_calls as calls
from tests.io.fakes.phone import HandshakeError
from tests.io.test_metrics import scrape, value
from tests.io.test_voice_calls import call
from voiceio.server import serve_voice

pytestmark = pytest.mark.realtime  # run alone: see scripts/dev.py
IN_PROGRESS = "ragchat_voice_calls_in_progress"
REFUSED = "ragchat_voice_calls_refused_total"
# test_voice_calls' fixtures, registered here under their own names
settings_overrides = calls.settings_overrides
speech = calls.speech
stream_url = calls.stream_url
voice = calls.voice
voice_settings = calls.voice_settings


async def test_a_call_in_progress_and_a_refused_stream_show_in_the_metrics(voice, api, stream_url):
    before = await scrape(api)
    with pytest.raises(HandshakeError):
        async with call(stream_url, sign="forged"):
            pass
    async with call(stream_url) as phone:
        await phone.wait_for_audio(10)  # the greeting: the call is answered
        during = await scrape(api)
        await phone.hang_up()
    with trio.fail_after(10):
        while voice.calls:
            await trio.sleep(0.05)
    after = await scrape(api)

    assert value(before, IN_PROGRESS) == 0
    assert value(during, IN_PROGRESS) == 1
    assert value(after, IN_PROGRESS) == 0
    unverified = {"reason": "unverified"}
    assert value(after, REFUSED, **unverified) - value(before, REFUSED, **unverified) == 1


# ---------------------------------------------------------------- the voice server alone

KEY = "voice-metrics-key-0123456789abcdef"


@pytest.fixture
async def alone(service, nursery, voice_settings) -> str:
    """The voice server on the service's settings, without the HTTP API (as `ragchat voice`
    runs it); its base URL."""
    port = await nursery.start(partial(serve_voice, service, port=0))
    return f"http://127.0.0.1:{port}"


class TestVoiceAlone:
    @pytest.fixture
    def voice_settings(self) -> dict[str, Any]:
        return {"service_api_key": KEY}

    async def test_its_port_answers_metrics_behind_the_api_key(self, alone, stream_url):
        async with httpx.AsyncClient(base_url=alone, timeout=10) as client:
            refused = await client.get("/metrics")
            wrong = await client.get("/metrics", headers={"X-API-Key": "wrong"})
            scraped = await client.get("/metrics", headers={"X-API-Key": KEY})
            bearer = await client.get("/metrics", headers={"Authorization": f"Bearer {KEY}"})

        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.headers["www-authenticate"] == "X-API-Key"
        assert wrong.status_code == 401
        assert KEY not in wrong.text
        assert scraped.status_code == 200, scraped.text
        assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
        samples = {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(scraped.text)
            for sample in family.samples
        }
        assert value(samples, IN_PROGRESS) == 0
        assert ("process_start_time_seconds", frozenset()) in samples
        assert bearer.status_code == 200

    async def test_calls_are_still_answered_on_the_same_port(self, service, nursery, stream_url):
        await nursery.start(serve_voice, service)  # on VOICE_PORT: the stream URL's port
        with pytest.raises(HandshakeError):  # a forged signature is still refused
            async with call(stream_url, sign="forged"):
                pass
        async with call(stream_url) as phone:
            await phone.wait_for_audio(10)  # the greeting: the call is answered
            await phone.hang_up()


class TestVoiceAlonePublic:
    @pytest.fixture
    def voice_settings(self) -> dict[str, Any]:
        return {"service_api_key": KEY, "metrics_public": True}

    async def test_metrics_public_opens_its_metrics(self, alone):
        async with httpx.AsyncClient(base_url=alone, timeout=10) as client:
            scraped = await client.get("/metrics")
            other = await client.get("/documents")
        assert scraped.status_code == 200
        assert IN_PROGRESS in scraped.text
        assert other.status_code != 200  # only /metrics: the rest is the media stream's


class TestVoiceAloneBeyondLoopbackWithoutKey:
    @pytest.fixture
    def voice_settings(self) -> dict[str, Any]:
        return {"voice_bind": "0.0.0.0"}  # the media streams come from the provider

    async def test_its_metrics_are_not_open_to_the_world(self, alone):
        async with httpx.AsyncClient(base_url=alone, timeout=10) as client:
            refused = await client.get("/metrics")
        assert refused.status_code == 401
        assert "SERVICE_API_KEY" in refused.json()["detail"]
        assert IN_PROGRESS not in refused.text
