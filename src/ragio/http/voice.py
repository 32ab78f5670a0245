"""POST /webhook/voice, the phone number's voice webhook, and GET /voice/calls.

The webhook is verified like /webhook/whatsapp (the provider's signature, never the API
key); it answers a call with the connect-stream markup that opens the media stream to
the voice server (``ragcore.voice.media``), passing the caller and the call id along as
``<Parameter>``s: the provider hands them to the stream's ``start`` message as
``customParameters``. The voice server records each call and its turns
(``ragio.voice.calls``); GET /voice/calls reads them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from quart import Blueprint, Response, request

from ragcore.errors import InvalidInput
from ragcore.voice.media import CALL_PARAMETER, CALLER_PARAMETER, connect_stream, stream_url
from ragio.http.context import service
from ragio.http.problems import Problem
from ragio.http.webhooks import telco_form
from ragio.voice.calls import recent_calls

blueprint = Blueprint("voice", __name__)

DEFAULT_CALLS = 20
MAX_CALLS = 100


@blueprint.post("/webhook/voice")
async def voice_webhook() -> Response:
    settings = service().settings
    params = await telco_form("voice", settings.voice_allow_unsigned, "VOICE_ALLOW_UNSIGNED")
    if not settings.voiceai_api_key:
        raise Problem(
            503, "the voice channel needs VOICEAI_API_KEY (the speech provider's key) to answer"
        )
    fields = _first(params)
    missing = [name for name in ("CallSid", "From") if not fields.get(name)]
    if missing:
        raise Problem(400, f"not a voice call: the form has no {' and no '.join(missing)}")
    target = stream_url(
        settings.voice_public_url, settings.public_base_url, request.host_url, settings.voice_port
    )
    markup = connect_stream(
        target, {CALLER_PARAMETER: fields["From"], CALL_PARAMETER: fields["CallSid"]}
    )
    return Response(markup, content_type="text/xml")


@blueprint.get("/voice/calls")
async def list_calls() -> dict[str, Any]:
    """The latest calls, newest first, with their turns: ``?limit=`` of them (default 20,
    at most 100); ``?before=`` a call's id for the page after the one it ended."""
    limit = _whole(request.args.get("limit"), "limit", MAX_CALLS) or DEFAULT_CALLS
    before = _whole(request.args.get("before"), "before", 2**62)
    calls = await service().database.run(recent_calls, limit, before)
    return {
        "calls": [_call_view(call) for call in calls],
        "next_before": calls[-1]["id"] if len(calls) == limit else None,
    }


def _first(params: list[tuple[str, str]]) -> dict[str, str]:
    """Each form field's first value."""
    fields: dict[str, str] = {}
    for name, value in params:
        fields.setdefault(name, value)
    return fields


def _whole(raw: str | None, field: str, maximum: int) -> int | None:
    """A query parameter from 1 to ``maximum``; None when not given."""
    if raw is None:
        return None
    digits = raw.isascii() and raw.isdigit() and len(raw) <= len(str(maximum))
    if not digits or not 1 <= int(raw) <= maximum:
        raise InvalidInput(field, f"must be a whole number from 1 to {maximum}")
    return int(raw)


def _call_view(call: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: _shown(v) for k, v in call.items() if k != "turns"},
        "turns": [{k: _shown(v) for k, v in turn.items()} for turn in call["turns"]],
    }


def _shown(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
