"""The voice channel's pure rules: what is said aloud, the echo rule, the media stream's
and the speech provider's wire formats, the connect-stream markup."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET

import pytest

from ragcore.voice import deepgram, media
from ragcore.voice.audio import SILENT_FRAME, encode, frames, level_db
from ragcore.voice.echo import ECHO_MARGIN_DB, EchoGuard
from ragcore.voice.speech import LONG_SENTENCE_CHARS, SentenceSplitter, spoken


def split_streamed(text: str, step: int) -> list[str]:
    splitter = SentenceSplitter()
    out = []
    for i in range(0, len(text), step):
        out += splitter.feed(text[i : i + step])
    return out + splitter.flush()


@pytest.mark.parametrize("step", [1, 2, 7, 1000])
def test_sentences_are_cut_as_they_complete_however_the_text_arrives(step: int) -> None:
    text = (
        "Items can be returned within 30 days of delivery. [1] Refunds take 3.5 days, "
        "says Dr. Smith of J. R. Tools Inc. [2, 3] Is that fast? Yes! Call us at 9 a.m."
    )
    assert split_streamed(text, step) == [
        "Items can be returned within 30 days of delivery.",
        "Refunds take 3.5 days, says Dr. Smith of J. R. Tools Inc.",
        "Is that fast?",
        "Yes! Call us at 9 a.m.",  # "Yes!" alone is too short to say on its own
    ]


def test_a_sentence_is_given_before_the_answer_ends() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("We are open from nine to five. We") == ["We are open from nine to five."]
    assert splitter.feed(" close on Sundays") == []
    assert splitter.flush() == ["We close on Sundays"]


def test_a_sentence_that_never_ends_is_cut_at_a_clause() -> None:
    clause = "we ship to every country in the European Union, "
    sentences = SentenceSplitter().feed(clause * 8)
    assert sentences and all(len(s) <= LONG_SENTENCE_CHARS for s in sentences)
    assert sentences[0].endswith(",")


def test_citations_markdown_and_links_are_not_read_aloud() -> None:
    assert spoken("**Returns**: see [the policy](https://x.example/p) [1][2].") == (
        "Returns: see the policy."
    )
    assert spoken("- Visit https://shop.example.com/help now [3, 4]") == (
        "Visit the link in our documents now"
    )


def test_levels_follow_the_amplitude() -> None:
    loud = encode([16000, -16000] * 80)
    quiet = encode([1600, -1600] * 80)
    assert level_db(SILENT_FRAME) == -100.0
    assert abs((level_db(loud) - level_db(quiet)) - 20) < 0.5
    assert [len(f) for f in frames(b"\x00" * 170)] == [160, 160]


def test_the_echo_rule_tells_the_caller_from_the_bots_voice() -> None:
    guard = EchoGuard()
    for i in range(10):
        guard.playing(i * 0.02, -10.0)
    assert guard.exposed(0.1)
    assert not guard.is_caller(-30.0, True, 0.15)  # 20 dB down: echo
    assert guard.is_caller(-10.0 - ECHO_MARGIN_DB + 1, True, 0.15)  # a caller as loud
    assert not guard.is_caller(-5.0, False, 0.15)  # loud but not speech: a bang
    assert guard.exposed(0.7)  # echo can still come back
    assert not guard.exposed(0.9)
    assert guard.is_caller(-60.0, True, 0.9)  # nothing played: any speech is the caller


def test_cleared_audio_never_plays_so_it_cannot_echo() -> None:
    guard = EchoGuard()
    guard.playing(0.0, -10.0)
    guard.playing(0.5, -10.0)  # queued, to play later
    guard.cleared(0.1)
    assert not guard.exposed(0.75)


def start_message(**start: object) -> str:
    body = {
        "streamSid": "MZ1",
        "callSid": "CA1",
        "accountSid": "AC1",
        "tracks": ["inbound"],
        "customParameters": {"caller": "+15551234567", "call_sid": "CA1"},
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        **start,
    }
    return json.dumps({"event": "start", "sequenceNumber": "1", "start": body, "streamSid": "MZ1"})


def test_the_media_stream_events_are_read() -> None:
    started = media.parse_message(start_message())
    assert started == media.StreamStart("MZ1", "CA1", {"caller": "+15551234567", "call_sid": "CA1"})
    assert started.caller == "+15551234567"
    payload = base64.b64encode(SILENT_FRAME).decode()
    message = {"event": "media", "streamSid": "MZ1", "media": {"payload": payload}}
    assert media.parse_message(json.dumps(message)) == media.StreamMedia(SILENT_FRAME)
    assert media.parse_message('{"event":"mark","mark":{"name":"2.0"}}') == media.StreamMark("2.0")
    dtmf = '{"event":"dtmf","dtmf":{"track":"inbound_track","digit":"5"}}'
    assert media.parse_message(dtmf) == media.StreamDigit("5")
    assert media.parse_message('{"event":"stop","stop":{}}') == media.StreamStop()
    assert media.parse_message('{"event":"something new"}') is None


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"event":"media","media":{"payload":"***"}}',
        '{"event":"media"}',
        '{"event":"start"}',
        start_message(mediaFormat={"encoding": "audio/l16", "sampleRate": 16000}),
        "x" * 70000,
    ],
)
def test_frames_that_are_not_the_protocol_are_refused(text: str) -> None:
    with pytest.raises(media.BadMessage):
        media.parse_message(text)


def test_outbound_messages_carry_the_stream_sid() -> None:
    sent = json.loads(media.media_message("MZ9", b"\x01\x02"))
    assert sent == {"event": "media", "streamSid": "MZ9", "media": {"payload": "AQI="}}
    assert json.loads(media.mark_message("MZ9", "3.1"))["mark"] == {"name": "3.1"}
    assert json.loads(media.clear_message("MZ9")) == {"event": "clear", "streamSid": "MZ9"}


def test_the_connect_stream_markup_passes_values_as_parameters() -> None:
    markup = media.connect_stream(
        "wss://voice.example.com:8765", {"caller": '+1555 "<&>"', "call_sid": "CA1"}
    )
    root = ET.fromstring(markup)  # noqa: S314 (our own markup)
    stream = root.find("./Connect/Stream")
    assert stream is not None and stream.get("url") == "wss://voice.example.com:8765"
    values = {p.get("name"): p.get("value") for p in stream.findall("Parameter")}
    assert values == {"caller": '+1555 "<&>"', "call_sid": "CA1"}


def test_a_transfer_dials_the_number_escaped_on_the_calls_own_resource() -> None:
    assert media.dial("+15550001111") == "<Response><Dial>+15550001111</Dial></Response>"
    root = ET.fromstring(media.dial("+1555<&>"))  # noqa: S314 (our own markup)
    assert root.findtext("Dial") == "+1555<&>"
    assert media.call_path("AC1", "CA2") == "/2010-04-01/Accounts/AC1/Calls/CA2.json"
    assert media.call_path("AC1", "CA/../x") == "/2010-04-01/Accounts/AC1/Calls/CA%2F..%2Fx.json"


def test_the_speech_provider_urls() -> None:
    listen = deepgram.listen_url("https://api.deepgram.com", "nova-3", "en")
    assert listen.startswith("wss://api.deepgram.com/v1/listen?")
    for part in ("encoding=mulaw", "sample_rate=8000", "interim_results=true", "endpointing="):
        assert part in listen
    assert deepgram.listen_url("http://127.0.0.1:9/dg", "m", "es").startswith(
        "ws://127.0.0.1:9/dg/v1/listen?"
    )
    speak = deepgram.speak_url("https://api.deepgram.com", "")
    assert "model=aura-2-thalia-en" in speak and "container=none" in speak
    assert deepgram.auth_header("k") == {"Authorization": "Token k"}


def test_the_speech_provider_results_are_read() -> None:
    def results(text: str, final: bool, speech_final: bool) -> str:
        return json.dumps(
            {
                "type": "Results",
                "is_final": final,
                "speech_final": speech_final,
                "channel": {"alternatives": [{"transcript": text, "confidence": 0.9}]},
            }
        )

    assert deepgram.read_listen_message(results(" hi there ", True, True)) == deepgram.Heard(
        "hi there", True, True
    )
    assert deepgram.read_listen_message(results("hi", False, False)).final is False
    assert deepgram.read_listen_message('{"type":"UtteranceEnd"}').ends_utterance
    assert deepgram.read_listen_message('{"type":"Metadata"}') is None
    assert deepgram.read_listen_message('{"type":"SpeechStarted"}') is None
    with pytest.raises(ValueError):
        deepgram.read_listen_message('{"type":"Results","channel":{}}')
