"""POST /webhook/telegram, /webhook/whatsapp and /webhook/discord.

Each request is verified by the platform's own secret or signature (never the API key)
before anything else (Telegram's secret header before the body is even read); then its
body is read (400 when it is not the platform's shape; 422 naming a form field with a
NUL, as on every route),
the delivery is claimed and acknowledged at once, and answered in the background
(``ragio.channels.intake``).
"""

from __future__ import annotations

import logging
from typing import Any

import trio
from quart import Blueprint, Response, current_app, request

from ragcore.api.operations import JSON, Reply, operation
from ragcore.channels import discord, telco, telegram, whatsapp
from ragcore.channels.messages import (
    BadShape,
    ButtonPress,
    Ignored,
    InboundMessage,
    Verification,
)
from ragcore.channels.required import missing_settings
from ragcore.inputs import check_text_input
from ragio.channels.intake import Intake
from ragio.http.context import service
from ragio.http.problems import Problem

blueprint = Blueprint("webhooks", __name__)
log = logging.getLogger(__name__)
INTAKE = "ragchat.channel_intake"
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'
XML = ({"type": "string"}, "text/xml")
SIGNED_FORM = {
    "open": True,
    "other_bodies": (("application/x-www-form-urlencoded", {"type": "object"}),),
    "headers": {"X-Twilio-Signature": "the provider's signature (or X-Telco-Signature)"},
}


@blueprint.post("/webhook/telegram")
@operation(
    Reply(200, "Taken (or ignored): {}", dict),
    *(400, 403, 503),
    open=True,
    other_bodies=((JSON, {"type": "object"}),),
    headers={telegram.SECRET_HEADER: "must equal TELEGRAM_WEBHOOK_SECRET"},
)
async def telegram_webhook() -> dict[str, Any]:
    """Telegram Bot API updates (setWebhook points here)

    Verified by the X-Telegram-Bot-Api-Secret-Token header, which must equal
    TELEGRAM_WEBHOOK_SECRET (no API key). A message is acknowledged at once and answered
    through sendMessage; the same update_id is answered once. A rating button pressed (a
    callback_query) rates its answer when it came from that answer's chat, and is
    answered (answerCallbackQuery). Other update kinds are acknowledged and ignored."""
    settings = service().settings
    given = request.headers.get(telegram.SECRET_HEADER)
    # checked on the headers alone, before the body is read: a stranger is refused at
    # once, however slowly it sends a body (a signature over the body, as Discord's or
    # the telephony provider's, can only be checked once it is all there)
    _verified(
        telegram.check_secret(
            settings.telegram_webhook_secret, given, settings.telegram_allow_unsigned
        ),
        "telegram",
        "TELEGRAM_ALLOW_UNSIGNED",
        403,
    )
    body = await request.get_data()
    await _take(_parsed(telegram.parse_update, body))
    return {}


@blueprint.post("/webhook/whatsapp")
@operation(Reply(200, "Taken: an empty TwiML <Response/>", *XML), 400, 403, 422, 503, **SIGNED_FORM)
async def whatsapp_webhook() -> Response:
    """Incoming WhatsApp messages from the telephony provider

    Form-encoded, as the provider sends it; verified by X-Twilio-Signature (or
    X-Telco-Signature): HMAC-SHA1 with TELCO_AUTH_TOKEN over PUBLIC_BASE_URL + path and the
    sorted form parameters. Answered through the Messages API; the same MessageSid is
    answered once."""
    allowed = service().settings.whatsapp_allow_unsigned
    params = await telco_form("whatsapp", allowed, "WHATSAPP_ALLOW_UNSIGNED")
    await _take(_parsed(whatsapp.parse_form, params))
    # no reply in the response: it goes through the Messages API once answered
    return Response(EMPTY_TWIML, content_type="text/xml")


@blueprint.post("/webhook/discord")
@operation(
    Reply(200, "An interaction response: PONG (1), deferred (5) or a message (4)", dict),
    *(400, 401, 503),
    open=True,
    other_bodies=((JSON, {"type": "object"}),),
    headers={
        discord.SIGNATURE_HEADER: "Ed25519 over X-Signature-Timestamp + body",
        discord.TIMESTAMP_HEADER: "whole Unix seconds, at most 5 minutes from the server's "
        "clock either way (401 otherwise)",
    },
)
async def discord_webhook() -> dict[str, Any]:
    """Discord interactions (the application's Interactions Endpoint URL)

    Verified by X-Signature-Ed25519 over X-Signature-Timestamp + body with
    DISCORD_PUBLIC_KEY (401 otherwise). PING is answered with PONG; /ask with a deferred
    response (type 5), then the answer replaces it."""
    settings = service().settings
    body = await request.get_data()
    verdict = discord.check_signature(
        settings.discord_public_key,
        request.headers.get(discord.SIGNATURE_HEADER),
        request.headers.get(discord.TIMESTAMP_HEADER),
        body,
        service().clock.now(),
    )
    _verified(verdict, "discord", "", 401)
    parsed = _parsed(discord.parse_interaction, body)
    if isinstance(parsed, discord.Ping):
        return discord.PONG
    if isinstance(parsed, discord.Immediate):
        return parsed.response
    await _take(parsed)
    return discord.DEFERRED


async def telco_form(
    channel: str, allow_unsigned: bool, unsigned_setting: str, unset: str = ""
) -> list[tuple[str, str]]:
    """The form of a request from the telephony provider (WhatsApp, the voice webhook),
    once its signature over PUBLIC_BASE_URL (or this request's URL) and the form has
    passed; 403 otherwise, unless ``allow_unsigned``; then 422 naming a field that holds
    text that cannot be stored (a NUL). ``unset``: what else the channel lacks (a
    setting not set), said in the log line of a refusal, never to the caller."""
    settings = service().settings
    params = telco.form_params(await request.get_data(), request.mimetype)
    url = telco.public_url(
        settings.public_base_url or request.host_url, request.path, request.query_string.decode()
    )
    given = next(
        (request.headers[h] for h in telco.SIGNATURE_HEADERS if h in request.headers), None
    )
    verdict = telco.check_signature(settings.telco_auth_token, url, params, given, allow_unsigned)
    _verified(verdict, channel, unsigned_setting, 403, unset)
    for name, value in params:  # text that cannot be stored: 422, as on every route
        check_text_input(name, "form field names")
        check_text_input(value, name)
    return params


def _verified(
    verdict: Verification, channel: str, unsigned_setting: str, status: int, unset: str = ""
) -> None:
    """Refuse an unverified request; log every unsigned one let in (testing only). The
    caller is not told why (whether a secret is configured, say): the log is, with
    ``unset``, what the channel would lack once verified."""
    if not verdict.accepted:
        also = f"; {unset}" if unset else ""
        log.info("refused a %s webhook request: %s%s", channel, verdict.reason, also)
        raise Problem(status, f"the {channel} request is not verified; the service log says why")
    if not verdict.signed:
        log.warning(
            "%s=true: accepted an unverified %s webhook request (%s); "
            "turn it off outside local testing",
            unsigned_setting,
            channel,
            verdict.reason,
        )


def _parsed(parse: Any, data: Any) -> Any:
    try:
        return parse(data)
    except BadShape as error:
        raise Problem(400, f"not a {request.path.rsplit('/', 1)[-1]} update: {error}") from None


async def _take(parsed: InboundMessage | ButtonPress | Ignored) -> None:
    """Claim a message's delivery and start answering it in the background (a button
    press: take it in the background)."""
    if isinstance(parsed, Ignored):
        log.info("ignored a %s update: %s", request.path, parsed.reason)
        return
    missing = missing_settings(service().settings, parsed.channel, "reply")
    if missing:  # refused before claiming, so the platform's redelivery is answered later
        raise Problem(503, f"{parsed.channel} replies need {', '.join(missing)}")
    if isinstance(parsed, ButtonPress):
        _intake().press_later(parsed)
        return
    await _intake().take(parsed)


def _intake() -> Intake:
    """The app's intake: answers run in the app's nursery, which outlives each request."""
    if INTAKE not in current_app.extensions:
        nursery = current_app.nursery  # type: ignore[attr-defined]
        current_app.extensions[INTAKE] = Intake(service(), nursery)
    intake: Intake = current_app.extensions[INTAKE]
    return intake


STOPPED = "ragchat.channel_intake.stopped"


@blueprint.before_app_serving
async def watch_deliveries() -> None:
    """This process's presence, and the deliveries gone processes left unanswered taken
    up, now and while the app serves (``Intake.watch``)."""
    stopped = current_app.extensions[STOPPED] = trio.Event()
    await _intake().here()  # first, and then the deliveries are resumed (in ``watch``)
    current_app.nursery.start_soon(_intake().watch, stopped)  # type: ignore[attr-defined]


@blueprint.after_app_serving
async def stop_watching() -> None:
    stopped: trio.Event | None = current_app.extensions.get(STOPPED)
    if stopped is not None:
        stopped.set()
