"""POST /webhook/voice, the phone number's voice webhook, and GET /voice/calls.

The webhook is verified like /webhook/whatsapp (the provider's signature, never the API
key); it answers a call with the connect-stream markup that opens the media stream to
the voice server (``ragcore.voice.media``), passing the caller and the call id along as
``<Parameter>``s: the provider hands them to the stream's ``start`` message as
``customParameters``. The voice server records each call (``ragio.voice.calls``) and
its turns, as the turns of the call's conversation (``ragio.chat.conversations``); GET
/voice/calls reads them.
"""

from __future__ import annotations

from quart import Blueprint, Response, request

from ragcore.api.operations import Reply, operation
from ragcore.api.queries import read_query
from ragcore.api.voice import CallsQuery, VoiceCalls, incoming_call
from ragcore.converter import converter
from ragcore.voice.media import (
    CALL_PARAMETER,
    CALLER_PARAMETER,
    check_parameter,
    connect_stream,
    stream_url,
)
from ragio.http.context import service
from ragio.http.problems import Problem
from ragio.http.webhooks import SIGNED_FORM, XML, telco_form
from ragio.voice.calls import recent_calls

blueprint = Blueprint("voice", __name__)
NOT_CONFIGURED = (
    "the voice channel is not configured: it needs VOICEAI_API_KEY (the speech provider's "
    "key) to answer"
)


@blueprint.post("/webhook/voice")
@operation(
    Reply(200, "<Response><Connect><Stream url=…> with the Parameters caller and call_sid", *XML),
    *(400, 403, 422, 503),
    **SIGNED_FORM,
)
async def voice_webhook() -> Response:
    """Incoming calls from the telephony provider (the number's voice URL)

    Form-encoded, as the provider sends it (CallSid, From, To, …); verified like
    /webhook/whatsapp (403 otherwise, unless VOICE_ALLOW_UNSIGNED=true). Answered with
    TwiML that connects the call to the media stream at VOICE_PUBLIC_URL, else
    wss://<PUBLIC_BASE_URL's host, else this request's>:VOICE_PORT (ws:// for http), with
    the caller and the call id as <Parameter>s. A verified call without VOICEAI_API_KEY
    is 503 (the signature is checked first: a stranger is not told what is configured;
    the log line of the 403 names the missing key too); 422 naming a field with a NUL,
    or a caller or call id with a control character."""
    settings = service().settings
    unset = "" if settings.voiceai_api_key else NOT_CONFIGURED
    params = await telco_form("voice", settings.voice_allow_unsigned, "VOICE_ALLOW_UNSIGNED", unset)
    if unset:
        raise Problem(503, NOT_CONFIGURED)
    caller, call = incoming_call(params)
    check_parameter(caller, "From")
    check_parameter(call, "CallSid")
    target = stream_url(
        settings.voice_public_url, settings.public_base_url, request.host_url, settings.voice_port
    )
    markup = connect_stream(target, {CALLER_PARAMETER: caller, CALL_PARAMETER: call})
    return Response(markup, content_type="text/xml")


@blueprint.get("/voice/calls")
@operation(Reply(200, "The calls", VoiceCalls), 422, query=CallsQuery)
async def list_calls() -> VoiceCalls:
    """The latest phone calls, newest first, each with its turns

    Kept 90 days. The caller is shown only as a hash."""
    query = read_query(CallsQuery, request.args)
    calls = await service().database.run(recent_calls, query.limit, query.before or None)
    next_before = calls[-1]["id"] if len(calls) == query.limit else None
    return converter.structure({"calls": calls, "next_before": next_before}, VoiceCalls)
