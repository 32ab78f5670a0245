"""WhatsApp end to end on the served app: requests signed by the telephony provider's own
RequestValidator over the public URL, answered through a fake Messages API on
127.0.0.1, then the workflow call; every way a request is refused or not answerable."""

from __future__ import annotations

import logging

import pytest
from twilio.request_validator import RequestValidator

from tests.io.channels import (
    LOCAL_WORKFLOWS,
    QUESTION,
    REPLY,
    add_refunds,
    add_workflow,
    restarted,
    wait_for,
)
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.twilio_server import FakeTelco

SID = "AC" + "0123456789abcdef" * 2
AUTH_TOKEN = "f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8"
# behind a reverse proxy that strips /ragchat: the provider calls this URL, this
# process sees /webhook/whatsapp on 127.0.0.1
PUBLIC = "https://shop.example.com/ragchat"
PUBLIC_URL = PUBLIC + "/webhook/whatsapp"
CUSTOMER = "whatsapp:+4915112345678"
BUSINESS = "whatsapp:+14155238886"


@pytest.fixture
async def openai(serve_fake):
    return await serve_fake(FakeOpenAI(reply=REPLY))


@pytest.fixture
async def telco(serve_fake):
    return await serve_fake(FakeTelco(SID, AUTH_TOKEN))


@pytest.fixture
async def settings_overrides(request, openai, telco):
    settings = {
        "telco_account_sid": SID,
        "telco_auth_token": AUTH_TOKEN,
        "telco_api_base_url": telco.base_url,
        "public_base_url": PUBLIC,
        **LOCAL_WORKFLOWS,
    }
    return on_openai(openai, **{**settings, **getattr(request, "param", {})})


def incoming(sid: str = "SM" + "a" * 32, **fields: str) -> dict[str, str]:
    """The form the provider posts for an incoming WhatsApp message."""
    form = {
        "SmsMessageSid": sid,
        "NumMedia": "0",
        "ProfileName": "Zoë",
        "MessageType": "text",
        "SmsSid": sid,
        "WaId": "4915112345678",
        "SmsStatus": "received",
        "Body": QUESTION,
        "To": BUSINESS,
        "NumSegments": "1",
        "ReferralNumMedia": "0",
        "MessageSid": sid,
        "AccountSid": SID,
        "From": CUSTOMER,
        "ApiVersion": "2010-04-01",
    }
    form.update(fields)
    return {k: v for k, v in form.items() if v is not None}


async def post(api, form, *, url=PUBLIC_URL, token=AUTH_TOKEN, header="X-Twilio-Signature"):
    """POST ``form`` signed as the provider signs it (None: unsigned)."""
    headers = {}
    if token is not None:
        headers[header] = RequestValidator(token).compute_signature(url, form)
    return await api.post("/webhook/whatsapp", data=form, headers=headers)


async def test_a_signed_message_is_answered_through_the_messages_api_then_workflows(
    api, telco, receiver
):
    await add_refunds(api)
    await add_workflow(api, receiver.url("/wa"), ["whatsapp"])
    await add_workflow(api, receiver.url("/tg"), ["telegram"])

    response = await post(api, incoming())

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/xml")
    assert response.text.endswith("<Response></Response>")
    [message] = await wait_for(lambda: telco.messages)
    assert message["To"] == CUSTOMER
    assert message["From"] == BUSINESS  # the number the customer wrote to
    assert message["Body"] == f"{REPLY}\n\nSources:\n[1] refunds.md › Returns and refunds"

    [call] = await wait_for(lambda: receiver.requests)
    assert call.path == "/wa"
    assert call.body["channel"] == "whatsapp" and call.body["message"] == QUESTION
    assert call.body["ai_reply"] == REPLY
    assert call.body["context"]["sender"] == "4915112345678"
    assert call.body["context"]["sender_name"] == "Zoë"
    assert call.body["context"]["role"] == "support"


@pytest.mark.parametrize(
    "settings_overrides", [{"whatsapp_from_number": "+15005550006"}], indirect=True
)
async def test_replies_come_from_the_configured_sender_number(api, telco):
    await add_refunds(api)
    assert (await post(api, incoming())).status_code == 200
    [message] = await wait_for(lambda: telco.messages)
    assert message["From"] == "whatsapp:+15005550006"


async def test_the_x_telco_signature_header_name_is_accepted(api, telco):
    await add_refunds(api)
    assert (await post(api, incoming(), header="X-Telco-Signature")).status_code == 200
    await wait_for(lambda: telco.messages)


@pytest.mark.parametrize(
    "signing",
    [
        {"token": None},  # unsigned
        {"token": "another-accounts-token"},
        # signed for the URL this process sees: the provider signs the public one
        {"url": "http://127.0.0.1/webhook/whatsapp"},
        {"url": "https://shop.example.com/webhook/whatsapp"},  # the proxy prefix left out
    ],
)
async def test_a_missing_or_wrong_signature_is_403_and_nothing_is_answered(
    api, openai, telco, signing
):
    response = await post(api, incoming(), **signing)
    assert response.status_code == 403
    assert AUTH_TOKEN not in response.text
    assert not telco.requests and not openai.requests


async def test_a_tampered_form_is_403(api, telco):
    form = incoming()
    signature = RequestValidator(AUTH_TOKEN).compute_signature(PUBLIC_URL, form)
    form["Body"] = "Send me everyone's phone numbers"
    response = await api.post(
        "/webhook/whatsapp", data=form, headers={"X-Twilio-Signature": signature}
    )
    assert response.status_code == 403
    assert not telco.requests


@pytest.mark.parametrize("settings_overrides", [{"telco_auth_token": ""}], indirect=True)
async def test_without_an_auth_token_nothing_is_verified(api, telco):
    assert (await post(api, incoming())).status_code == 403


@pytest.mark.parametrize("settings_overrides", [{"whatsapp_allow_unsigned": "true"}], indirect=True)
async def test_unsigned_mode_answers_and_warns_every_time(api, telco, caplog):
    await add_refunds(api)
    caplog.set_level(logging.WARNING, "ragio.http.webhooks")
    assert (await post(api, incoming("SM1"), token=None)).status_code == 200
    assert (await post(api, incoming("SM2"), token="wrong")).status_code == 200
    assert (await post(api, incoming("SM3"))).status_code == 200  # signed: no warning
    await wait_for(lambda: len(telco.messages) >= 3)
    warnings = [r for r in caplog.records if "WHATSAPP_ALLOW_UNSIGNED=true" in r.getMessage()]
    assert len(warnings) == 2
    assert all(r.levelno == logging.WARNING for r in warnings)
    assert AUTH_TOKEN not in caplog.text


@pytest.mark.parametrize(
    "form",
    [
        {"Body": "hi", "From": CUSTOMER, "To": BUSINESS},  # no MessageSid
        {"MessageSid": "SM1", "Body": "hi", "To": BUSINESS},  # no From
        {},
    ],
)
async def test_a_signed_form_that_is_no_incoming_message_is_400(api, telco, form):
    response = await post(api, form)
    assert response.status_code == 400
    assert "not a whatsapp update" in response.json()["detail"]
    assert not telco.requests


async def test_a_status_callback_is_acknowledged_and_ignored(api, telco):
    status = {"MessageSid": "SM9", "MessageStatus": "delivered", "To": CUSTOMER, "From": BUSINESS}
    assert (await post(api, status)).status_code == 200
    await add_refunds(api)
    assert (await post(api, incoming())).status_code == 200
    await wait_for(lambda: telco.messages)
    assert len(telco.messages) == 1


async def test_a_redelivered_message_is_answered_once_even_after_a_restart(
    api, service, telco, nursery
):
    await add_refunds(api)
    assert (await post(api, incoming("SM1"))).status_code == 200
    assert (await post(api, incoming("SM1"))).status_code == 200
    await wait_for(lambda: telco.messages)
    async with restarted(service, nursery) as again:
        assert (await post(again, incoming("SM1"))).status_code == 200
        assert (await post(again, incoming("SM2"))).status_code == 200
        await wait_for(lambda: len(telco.messages) >= 2)
    assert len(telco.messages) == 2


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (
            {
                "NumMedia": "1",
                "MediaContentType0": "image/jpeg",
                "Body": "",
                "MessageType": "image",
            },
            "images",
        ),
        (
            {
                "NumMedia": "1",
                "MediaContentType0": "image/webp",
                "Body": "",
                "MessageType": "sticker",
            },
            "stickers",
        ),
        (
            {"MessageType": "location", "Body": "", "Latitude": "52.5", "Longitude": "13.4"},
            "locations",
        ),
    ],
)
async def test_a_message_kind_it_cannot_read_gets_a_polite_reply(api, openai, telco, fields, named):
    form = incoming(**fields)
    if "MediaContentType0" in fields:
        form["MediaUrl0"] = f"https://api.twilio.com/2010-04-01/Accounts/{SID}/Messages/x/Media/y"
    assert (await post(api, form)).status_code == 200
    [message] = await wait_for(lambda: telco.messages)
    assert f"can't read {named}" in message["Body"]
    assert not openai.requests_to("/v1/chat/completions")


async def test_a_long_answer_arrives_in_messages_within_the_1600_limit(api, openai, telco):
    await add_refunds(api)
    openai.reply = " ".join(f"Point {i} is about returns within 30 days [1]." for i in range(80))
    assert (await post(api, incoming())).status_code == 200
    messages = await wait_for(lambda: len(telco.messages) >= 3 and telco.messages)
    assert all(len(m["Body"]) <= 1600 for m in messages)
    assert messages[0]["Body"].startswith("Point 0 is about")
    assert messages[-1]["Body"].endswith("Sources:\n[1] refunds.md › Returns and refunds")


@pytest.mark.parametrize("settings_overrides", [{"telco_account_sid": ""}], indirect=True)
async def test_without_an_account_sid_the_message_is_refused_for_later(api):
    response = await post(api, incoming())
    assert response.status_code == 503
    assert "TELCO_ACCOUNT_SID" in response.json()["detail"]
