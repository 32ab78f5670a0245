"""The voice server's calls in /metrics, when `ragchat serve` runs it in its process: a
call in progress, and a media stream refused. Real calls, as in test_voice_calls."""

from __future__ import annotations

import pytest
import trio

from tests.io import test_voice_calls as calls
from tests.io.fakes.phone import HandshakeError
from tests.io.test_metrics import scrape, value
from tests.io.test_voice_calls import call

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
