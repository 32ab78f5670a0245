"""A caller who asks for a person (docs/handoff.md), end to end: with VOICE_TRANSFER_NUMBER
the call is put through (the fake provider receives the call update with ``<Dial>``, and
ends the media stream as the provider does); without it the caller leaves a message,
which is in the inbox as the customer's turn.

The caller's words are real audio (the fake speech-to-text finds where they start and
end) with scripted transcripts; the fake speech provider says each text as a short tone
of its own (``test_voice_shutdown.synthesized``), so the calls take a few seconds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio

from ragcore.voice.call import MESSAGE_TAKEN, TRANSFER_FAILED, TRANSFERRED_REASON
from tests.io import test_voice_calls as calls
from tests.io.fakes.deepgram_server import FakeDeepgram
from tests.io.fakes.phone import PhoneCall
from tests.io.fakes.twilio_server import FakeTelco
from tests.io.test_voice_calls import TOKEN, call, greeted, recorded_calls, spoken
from tests.io.test_voice_shutdown import synthesized
from voiceio.server import VoiceServer

pytestmark = pytest.mark.realtime  # run alone: see scripts/dev.py

ACCOUNT = "AC" + "7" * 32
CALL_SID = "CA" + "3" * 32
NUMBER = "+15550001111"
ASKING = "I want to talk to a person"
MESSAGE = "Please call me back about my refund"
# test_voice_calls' fixtures, registered here under their own names
settings_overrides = calls.settings_overrides
speech = calls.speech
stream_url = calls.stream_url
voice = calls.voice


@pytest.fixture
async def telco(serve_fake: Callable[[Any], Awaitable[Any]]) -> FakeTelco:
    return await serve_fake(FakeTelco(ACCOUNT, TOKEN))


@pytest.fixture
def transfer() -> str:
    """VOICE_TRANSFER_NUMBER: a test parametrizes it (blank: none)."""
    return ""


@pytest.fixture
def voice_settings(telco: FakeTelco, transfer: str) -> dict[str, Any]:
    return {
        "telco_account_sid": ACCOUNT,
        "telco_api_base_url": telco.base_url,
        "voice_transfer_number": transfer,
    }


async def says(phone: PhoneCall, speech: FakeDeepgram, text: str) -> None:
    """The caller says something (real audio) that speech-to-text hears as ``text``."""
    speech.transcriber = lambda audio: text
    await phone.say(await spoken("can i get a refund"))


async def heard_to_the_end(phone: PhoneCall) -> None:
    await phone.wait_until_quiet(800, 30)
    await phone.wait_until_played(10)


@pytest.mark.parametrize("transfer", [NUMBER])
async def test_a_caller_asking_for_a_person_is_put_through_to_the_transfer_number(
    voice: VoiceServer,
    speech: FakeDeepgram,
    telco: FakeTelco,
    api: httpx.AsyncClient,
    stream_url: str,
) -> None:
    speech.synthesizer = synthesized
    async with call(stream_url, call_sid=CALL_SID, account_sid=ACCOUNT) as phone:
        telco.place(phone)
        await greeted(phone)
        await says(phone, speech, ASKING)
        with trio.fail_after(30):  # the notice, heard, then the provider ends the stream
            await phone.ended.wait()
        assert phone.violations == []
    assert telco.call_updates == [
        (CALL_SID, {"Twiml": f"<Response><Dial>{NUMBER}</Dial></Response>"})
    ]
    notice = speech.spoken[-1].text
    assert notice.startswith("I'll put you through to a person")
    assert phone.played_audio.endswith(synthesized(notice))  # heard whole before
    [recorded] = await recorded_calls(api, voice)
    assert recorded["end_reason"] == TRANSFERRED_REASON
    [turn] = recorded["turns"]
    assert (turn["question"], turn["outcome"], turn["answer"]) == (ASKING, "handed_off", notice)


@pytest.mark.parametrize("transfer", [NUMBER])
async def test_a_transfer_the_provider_refuses_is_said_and_the_caller_leaves_a_message(
    voice: VoiceServer,
    speech: FakeDeepgram,
    telco: FakeTelco,
    api: httpx.AsyncClient,
    stream_url: str,
) -> None:
    speech.synthesizer = synthesized
    async with call(stream_url, call_sid=CALL_SID, account_sid=ACCOUNT) as phone:
        telco.place(phone)
        await greeted(phone)
        telco.fail_next(400)  # the provider does not take the call update
        await says(phone, speech, ASKING)
        with trio.fail_after(30):
            while speech.spoken[-1].text != TRANSFER_FAILED:
                await trio.sleep(0.05)
        await heard_to_the_end(phone)
        await says(phone, speech, MESSAGE)
        with trio.fail_after(30):
            while speech.spoken[-1].text != MESSAGE_TAKEN:
                await trio.sleep(0.05)
        await heard_to_the_end(phone)
        assert not phone.ended.is_set()
        await phone.hang_up()
    assert telco.call_updates == []
    [recorded] = await recorded_calls(api, voice)
    assert [t["outcome"] for t in recorded["turns"]] == ["handed_off", "to_person"]
    assert recorded["end_reason"] == "the caller hung up"


async def test_without_a_transfer_number_the_caller_leaves_a_message_for_the_inbox(
    voice: VoiceServer,
    speech: FakeDeepgram,
    telco: FakeTelco,
    api: httpx.AsyncClient,
    stream_url: str,
) -> None:
    speech.synthesizer = synthesized
    async with call(stream_url, call_sid=CALL_SID, account_sid=ACCOUNT) as phone:
        telco.place(phone)
        await greeted(phone)
        await says(phone, speech, ASKING)
        await heard_to_the_end(phone)
        assert any(s.text.startswith("Nobody from") for s in speech.spoken)
        await says(phone, speech, MESSAGE)
        with trio.fail_after(30):
            while speech.spoken[-1].text != MESSAGE_TAKEN:
                await trio.sleep(0.05)
        await heard_to_the_end(phone)
        await phone.hang_up()
    assert telco.call_updates == []
    await recorded_calls(api, voice)  # the call's last turn is kept
    listed = (await api.get("/conversations", params={"channel": "voice"})).json()
    [conversation] = listed["conversations"]
    kept = (await api.get(f"/conversations/{conversation['id']}")).json()
    assert kept["mode"] == "human"
    message = kept["turns"][-1]
    assert (message["question"], message["author"], message["outcome"]) == (
        MESSAGE,
        "customer",
        "to_person",
    )
