"""The speech provider's wire format (Deepgram's documented API), one key for both ways.

Speech-to-text streams over a WebSocket: ``/v1/listen`` with the phone's own format
(``encoding=mulaw&sample_rate=8000``), interim results, endpointing and utterance-end
messages; the client sends the caller's audio as binary frames and ``KeepAlive`` when it
has none to send (the provider closes a stream silent for 10 s). Text-to-speech is
``POST /v1/speak`` answering raw µ-law at 8 kHz (``container=none``), streamed, so the
first bytes can be played before the rest arrive.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import attrs

from ragcore.voice.audio import SAMPLE_RATE

DEFAULT_VOICE = "aura-2-thalia-en"
#: silence after speech, in ms, that ends an utterance (``speech_final``): short enough to
#: answer quickly, long enough not to cut a caller who pauses for breath
ENDPOINTING_MS = 300
#: a gap after the last word that ends an utterance even when endpointing missed it
UTTERANCE_END_MS = 1000
KEEP_ALIVE = json.dumps({"type": "KeepAlive"})
#: transcribe what was heard so far at once: the final result comes back ``from_finalize``
FINALIZE = json.dumps({"type": "Finalize"})
CLOSE_STREAM = json.dumps({"type": "CloseStream"})


def auth_header(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Token {api_key}"}


def listen_url(base_url: str, model: str, language: str) -> str:
    """The streaming speech-to-text URL under VOICEAI_BASE_URL (https -> wss)."""
    parts = urlsplit(base_url)
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
    query = urlencode(
        {
            "encoding": "mulaw",
            "sample_rate": SAMPLE_RATE,
            "channels": 1,
            "model": model,
            "language": language,
            "interim_results": "true",
            "endpointing": ENDPOINTING_MS,
            "utterance_end_ms": UTTERANCE_END_MS,
            "vad_events": "true",
            "punctuate": "true",
            "smart_format": "true",
        }
    )
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/v1/listen", query, ""))


def speak_url(base_url: str, voice: str) -> str:
    """The text-to-speech URL: raw µ-law at the phone's rate, no container to strip."""
    query = urlencode(
        {
            "model": voice or DEFAULT_VOICE,
            "encoding": "mulaw",
            "sample_rate": SAMPLE_RATE,
            "container": "none",
        }
    )
    return f"{base_url.rstrip('/')}/v1/speak?{query}"


@attrs.frozen
class Heard:
    """A transcript: ``final`` when the provider will not revise it, ``ends_utterance``
    when the caller has stopped speaking (``speech_final``, or an ``UtteranceEnd``),
    ``finalized`` when it answers a ``Finalize``: everything heard before it is in."""

    text: str
    final: bool
    ends_utterance: bool
    finalized: bool = False


def read_listen_message(text: str) -> Heard | None:
    """A streaming result read; None for messages that carry no transcript (metadata,
    ``SpeechStarted``). ValueError for a message that is not the provider's."""
    message = json.loads(text)
    if not isinstance(message, dict):
        raise ValueError("a message that is not a JSON object")
    kind = message.get("type")
    if kind == "UtteranceEnd":
        return Heard("", final=True, ends_utterance=True)
    if kind != "Results":
        return None
    alternatives = _alternatives(message)
    transcript = alternatives[0].get("transcript", "") if alternatives else ""
    if not isinstance(transcript, str):
        raise ValueError("a transcript that is not text")
    return Heard(
        transcript.strip(),
        final=bool(message.get("is_final")),
        ends_utterance=bool(message.get("speech_final")),
        finalized=bool(message.get("from_finalize")),
    )


def _alternatives(message: dict[str, Any]) -> list[dict[str, Any]]:
    channel = message.get("channel")
    alternatives = channel.get("alternatives") if isinstance(channel, dict) else None
    if not isinstance(alternatives, list) or not all(isinstance(a, dict) for a in alternatives):
        raise ValueError("a Results message without channel.alternatives")
    return alternatives
