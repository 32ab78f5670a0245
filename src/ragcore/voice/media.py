"""The telephony provider's media stream (Twilio Media Streams' wire format): JSON text
frames over a WebSocket the provider opens.

In: ``connected``, ``start`` (stream and call ids, the ``<Parameter>``s of the
connect-stream markup, the audio format), ``media`` (base64 µ-law, 20 ms a message),
``mark`` (audio sent before a mark of ours has played), ``dtmf``, ``stop``.
Out: ``media``, ``mark`` and ``clear`` (drop whatever audio is still queued), each with
the ``streamSid``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import quote, urlsplit
from xml.sax.saxutils import escape, quoteattr

import attrs

from ragcore.errors import InvalidInput
from ragcore.voice.audio import SAMPLE_RATE

#: a media message's text; a frame is 160 bytes (216 in base64), more tolerated
MAX_MESSAGE_CHARS = 64 * 1024
MEDIA_ENCODING = "audio/x-mulaw"
#: the names of the ``<Parameter>``s the voice webhook passes into the stream
CALLER_PARAMETER = "caller"
CALL_PARAMETER = "call_sid"
#: the media stream's scheme for the scheme the service is reached at
STREAM_SCHEMES = {"https": "wss", "http": "ws"}


class BadMessage(ValueError):
    """A frame that is not the media stream's protocol; the call is ended."""


@attrs.frozen
class StreamConnected:
    protocol: str


@attrs.frozen
class StreamStart:
    stream_sid: str
    call_sid: str
    #: the connect-stream markup's ``<Parameter>``s, as the provider passes them
    parameters: dict[str, str]

    @property
    def caller(self) -> str:
        return self.parameters.get(CALLER_PARAMETER, "")


@attrs.frozen
class StreamMedia:
    audio: bytes  # µ-law, normally one 20 ms frame


@attrs.frozen
class StreamMark:
    name: str


@attrs.frozen
class StreamDigit:
    digit: str


@attrs.frozen
class StreamStop:
    pass


StreamEvent = StreamConnected | StreamStart | StreamMedia | StreamMark | StreamDigit | StreamStop


def parse_message(text: str) -> StreamEvent | None:
    """One text frame read; None for an event this service does not use. BadMessage when
    the frame is not the protocol (the provider never sends one)."""
    if len(text) > MAX_MESSAGE_CHARS:
        raise BadMessage(f"a {len(text)}-character message is far larger than any event")
    try:
        message = json.loads(text)
    except ValueError:
        raise BadMessage("a frame that is not JSON") from None
    if not isinstance(message, dict):
        raise BadMessage("a frame that is not a JSON object")
    event = message.get("event")
    if event == "media":
        payload = _field(message, "media", "payload")
        try:
            return StreamMedia(base64.b64decode(payload, validate=True))
        except (binascii.Error, ValueError):
            raise BadMessage("a media payload that is not base64") from None
    if event == "mark":
        return StreamMark(_field(message, "mark", "name"))
    if event == "dtmf":
        return StreamDigit(_field(message, "dtmf", "digit"))
    if event == "start":
        return _start(message)
    if event == "stop":
        return StreamStop()
    if event == "connected":
        return StreamConnected(str(message.get("protocol", "")))
    return None


def _start(message: dict[str, Any]) -> StreamStart:
    start = message.get("start")
    if not isinstance(start, dict):
        raise BadMessage("a start event without its start object")
    media_format = start.get("mediaFormat") or {}
    encoding = media_format.get("encoding", MEDIA_ENCODING)
    rate = media_format.get("sampleRate", SAMPLE_RATE)
    if encoding != MEDIA_ENCODING or rate != SAMPLE_RATE:
        raise BadMessage(f"audio as {encoding} at {rate} Hz; this service takes µ-law at 8000 Hz")
    stream_sid = start.get("streamSid") or message.get("streamSid")
    call_sid = start.get("callSid")
    if not isinstance(stream_sid, str) or not stream_sid or not isinstance(call_sid, str):
        raise BadMessage("a start event without streamSid and callSid")
    parameters = start.get("customParameters") or {}
    if not isinstance(parameters, dict):
        raise BadMessage("customParameters that are not an object")
    return StreamStart(stream_sid, call_sid, {str(k): str(v) for k, v in parameters.items()})


def _field(message: dict[str, Any], group: str, name: str) -> str:
    value = message.get(group, {})
    value = value.get(name) if isinstance(value, dict) else None
    if not isinstance(value, str):
        raise BadMessage(f"a {message.get('event')} event without {group}.{name}")
    return value


def media_message(stream_sid: str, audio: bytes) -> str:
    payload = base64.b64encode(audio).decode("ascii")
    return json.dumps({"event": "media", "streamSid": stream_sid, "media": {"payload": payload}})


def mark_message(stream_sid: str, name: str) -> str:
    return json.dumps({"event": "mark", "streamSid": stream_sid, "mark": {"name": name}})


def clear_message(stream_sid: str) -> str:
    return json.dumps({"event": "clear", "streamSid": stream_sid})


#: what XML 1.0 cannot carry (C0 but tab and line ends), and no caller or call id holds
#: (the rest of C0, DEL, C1, Unicode's line and paragraph separators)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_parameter(value: str, field: str) -> str:
    """``value`` unchanged; InvalidInput naming ``field`` (the form field it came from)
    when it holds a control character, which the markup cannot carry."""
    found = _CONTROL.search(value)
    if found is not None:
        shown = repr(found.group())[1:-1]
        raise InvalidInput(
            field,
            f"contains a control character ({shown}), which a caller or call id never "
            "holds: remove it",
        )
    return value


def connect_stream(stream_url: str, parameters: dict[str, str]) -> str:
    """The markup that answers the voice webhook: connect the call's audio, both ways, to
    the media stream at ``stream_url``. Values travel as ``<Parameter>``s, since the
    provider drops a stream URL's query string."""
    items = "".join(
        f"<Parameter name={quoteattr(name)} value={quoteattr(value)}/>"
        for name, value in parameters.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f"<Response><Connect><Stream url={quoteattr(stream_url)}>{items}</Stream>"
        "</Connect></Response>"
    )


def dial(number: str) -> str:
    """The markup that puts a call through to ``number`` (VOICE_TRANSFER_NUMBER): sent as
    the ``Twiml`` of a call update, it replaces the call's ``<Connect><Stream>``, which
    ends the media stream."""
    return f"<Response><Dial>{escape(number)}</Dial></Response>"


def call_path(account_sid: str, call_sid: str) -> str:
    """The provider's resource of the call ``call_sid`` below TELCO_API_BASE_URL (its
    Calls API: a POST to it updates the call in progress)."""
    account, call = quote(account_sid, safe=""), quote(call_sid, safe="")
    return f"/2010-04-01/Accounts/{account}/Calls/{call}.json"


def stream_url(
    voice_public_url: str, public_base_url: str, request_url: str, voice_port: int
) -> str:
    """Where the provider opens the media stream: VOICE_PUBLIC_URL when set; else the host
    of PUBLIC_BASE_URL, else of the webhook request's own URL (its port and path left
    out), on ``voice_port``, as ``wss://`` for an https URL and ``ws://`` for an http one.
    """
    if voice_public_url:
        return voice_public_url
    parts = urlsplit(public_base_url or request_url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"{STREAM_SCHEMES.get(parts.scheme, 'wss')}://{host}:{voice_port}"
