"""Each platform's webhook check and update shape, signed with the platforms' own code
(the telephony provider's RequestValidator, PyNaCl for Ed25519)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from nacl.encoding import HexEncoder
from nacl.signing import SigningKey
from twilio.request_validator import RequestValidator

from ragcore.channels import discord, telco, telegram, whatsapp
from ragcore.channels.messages import BadShape, Ignored, InboundMessage
from ragcore.employees.builtin import BUILT_IN

# ---------------------------------------------------------------- Telegram

SECRET = "s3cret-token_1"


def update(**message) -> bytes:
    base = {
        "message_id": 7,
        "date": 1_700_000_000,
        "chat": {"id": -1001234, "type": "supergroup"},
        "from": {"id": 99, "is_bot": False, "first_name": "Ada", "last_name": "L"},
    }
    return json.dumps({"update_id": 5001, "message": {**base, **message}}).encode()


def test_telegram_secret_must_match():
    assert telegram.check_secret(SECRET, SECRET, False).accepted
    assert telegram.check_secret(SECRET, SECRET, False).signed
    for given in (None, "", "s3cret-token_2", SECRET + "x"):
        verdict = telegram.check_secret(SECRET, given, False)
        assert not verdict.accepted
        assert SECRET not in verdict.reason


def test_telegram_without_a_configured_secret_nothing_is_verified():
    assert not telegram.check_secret("", "", False).accepted
    assert not telegram.check_secret("", "anything", False).accepted


def test_telegram_unsigned_mode_lets_requests_in_marked_unsigned():
    verdict = telegram.check_secret("", None, True)
    assert verdict.accepted and not verdict.signed
    assert "TELEGRAM_WEBHOOK_SECRET" in verdict.reason


def test_a_telegram_text_message_is_read():
    message = telegram.parse_update(update(text="When do you open?"))
    assert message == InboundMessage(
        "telegram",
        "5001",
        "-1001234",
        "When do you open?",
        sender="99",
        sender_name="Ada L",
        reply_via={"message_id": 7},
    )


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"sticker": {"file_id": "x"}}, "sticker"),
        ({"photo": [{"file_id": "x"}], "caption": "what is this?"}, "photo"),
        ({"voice": {"file_id": "x"}}, "voice"),
        ({"location": {"latitude": 1, "longitude": 2}}, "location"),
    ],
)
def test_telegram_message_kinds_without_text_are_named(fields, kind):
    message = telegram.parse_update(update(**fields))
    assert message.kind == kind and not message.readable


@pytest.mark.parametrize(
    "body",
    [
        {"update_id": 1, "edited_message": {"message_id": 1}},
        {"update_id": 1, "my_chat_member": {}},
        json.loads(update(text="hi", **{"from": {"id": 5, "is_bot": True}})),
        json.loads(update(new_chat_members=[{"id": 3}])),
    ],
)
def test_telegram_updates_with_nothing_to_answer_are_ignored(body):
    assert isinstance(telegram.parse_update(json.dumps(body).encode()), Ignored)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"message": {"text": "hi"}}',
        b'{"update_id": "5", "message": {}}',
        b'{"update_id": true}',
        b'{"update_id": 5, "message": "hi"}',
        b'{"update_id": 5, "message": {"message_id": 1, "text": "hi"}}',
        b'{"update_id": 5, "message": {"message_id": 1, "chat": {"id": "x"}}}',
    ],
)
def test_what_is_not_an_update_is_a_bad_shape(body):
    with pytest.raises(BadShape):
        telegram.parse_update(body)


def test_telegram_replies_quote_the_question_once_in_plain_text():
    first, second = telegram.send_message_bodies("-1001234", ["one", "two"], 7)
    assert first["chat_id"] == -1001234 and first["text"] == "one"
    assert first["reply_parameters"] == {"message_id": 7, "allow_sending_without_reply": True}
    assert "reply_parameters" not in second and "parse_mode" not in first


# ---------------------------------------------------------------- WhatsApp

TOKEN = "12345678901234567890123456789012"
URL = "https://chat.example.com/webhook/whatsapp"
FORM = [
    ("SmsMessageSid", "SM0001"),
    ("NumMedia", "0"),
    ("ProfileName", "Zoë"),
    ("MessageSid", "SM0001"),
    ("WaId", "491701234567"),
    ("Body", "Wie lange dauert der Versand? ✓"),
    ("To", "whatsapp:+14155238886"),
    ("From", "whatsapp:+491701234567"),
    ("AccountSid", "AC0001"),
]


def test_our_signature_is_the_providers():
    expected = RequestValidator(TOKEN).compute_signature(URL, dict(FORM))
    assert telco.signature(TOKEN, URL, FORM) == expected
    assert telco.check_signature(TOKEN, URL, FORM, expected, False).signed


def test_repeated_parameters_are_signed_as_the_provider_signs_them():
    class Multi(dict):  # a MultiDict, as the provider's validator reads one
        def getall(self, name):
            return [v for n, v in FORM_MULTI if n == name]

    FORM_MULTI = [*FORM, ("MediaUrl0", "https://b.example/2"), ("MediaUrl0", "https://a.example/1")]
    expected = RequestValidator(TOKEN).compute_signature(URL, Multi(FORM_MULTI))
    assert telco.check_signature(TOKEN, URL, FORM_MULTI, expected, False).signed


@pytest.mark.parametrize(
    ("signed_url", "checked_url"),
    [
        ("https://chat.example.com:443/webhook/whatsapp", URL),
        (URL, "https://chat.example.com:443/webhook/whatsapp"),
    ],
)
def test_the_default_port_may_be_there_or_not(signed_url, checked_url):
    given = RequestValidator(TOKEN).compute_signature(signed_url, dict(FORM))
    assert telco.check_signature(TOKEN, checked_url, FORM, given, False).signed


@pytest.mark.parametrize(
    "tamper",
    [
        lambda url, form, sig: (url.replace("chat.", "evil."), form, sig),
        lambda url, form, sig: (url, [*form[:-1], ("From", "whatsapp:+1555")], sig),
        lambda url, form, sig: (url, [*form, ("Extra", "1")], sig),
        lambda url, form, sig: (url, form, sig[:-2] + "AA"),
        lambda url, form, sig: (url, form, ""),
        lambda url, form, sig: (url, form, None),
    ],
)
def test_anything_changed_or_missing_is_refused(tamper):
    given = RequestValidator(TOKEN).compute_signature(URL, dict(FORM))
    url, form, sig = tamper(URL, FORM, given)
    verdict = telco.check_signature(TOKEN, url, form, sig, False)
    assert not verdict.accepted and TOKEN not in verdict.reason


def test_a_wrong_token_is_refused_and_unsigned_mode_lets_it_in():
    given = RequestValidator("another-token").compute_signature(URL, dict(FORM))
    assert not telco.check_signature(TOKEN, URL, FORM, given, False).accepted
    assert not telco.check_signature("", URL, FORM, given, False).accepted
    verdict = telco.check_signature(TOKEN, URL, FORM, given, True)
    assert verdict.accepted and not verdict.signed


def test_the_public_url_keeps_the_proxys_path_prefix_and_the_query():
    assert (
        telco.public_url("https://example.com/ragchat", "/webhook/whatsapp", "a=1")
        == "https://example.com/ragchat/webhook/whatsapp?a=1"
    )
    assert telco.public_url("https://example.com/", "/webhook/whatsapp", "") == (
        "https://example.com/webhook/whatsapp"
    )


def test_a_whatsapp_text_message_is_read():
    message = whatsapp.parse_form(FORM)
    assert message.channel == "whatsapp" and message.delivery_id == "SM0001"
    assert message.conversation == "whatsapp:+491701234567"
    assert message.text == "Wie lange dauert der Versand? ✓"
    assert message.sender == "491701234567" and message.sender_name == "Zoë"
    assert message.reply_via == {"to_number": "whatsapp:+14155238886"}


@pytest.mark.parametrize(
    ("extra", "kind"),
    [
        ({"NumMedia": "1", "MediaContentType0": "image/jpeg", "Body": ""}, "image"),
        ({"NumMedia": "1", "MediaContentType0": "image/webp", "Body": ""}, "sticker"),
        ({"NumMedia": "1", "MediaContentType0": "audio/ogg", "Body": ""}, "audio"),
        ({"MessageType": "location", "Body": ""}, "location"),
        ({"Body": "   "}, "empty"),
    ],
)
def test_whatsapp_message_kinds_without_text_are_named(extra, kind):
    form = [(k, v) for k, v in FORM if k not in extra] + list(extra.items())
    assert whatsapp.parse_form(form).kind == kind


def test_a_status_callback_is_ignored():
    form = [("MessageSid", "SM9"), ("MessageStatus", "delivered"), ("To", "whatsapp:+1")]
    assert isinstance(whatsapp.parse_form(form), Ignored)


@pytest.mark.parametrize(
    "form",
    [
        [],
        [("Body", "hi"), ("From", "whatsapp:+1"), ("To", "whatsapp:+2")],
        [("MessageSid", "SM1"), ("Body", "hi"), ("To", "whatsapp:+2")],
        [("MessageSid", "SM1"), ("Body", "hi"), ("From", "a"), ("To", "b"), ("NumMedia", "x")],
    ],
)
def test_what_is_not_an_incoming_message_is_a_bad_shape(form):
    with pytest.raises(BadShape):
        whatsapp.parse_form(form)


def test_replies_come_from_the_whatsapp_address_of_the_number():
    forms = whatsapp.message_forms("whatsapp:+4917", "+14155238886", ["a", "b"])
    assert forms == [
        {"To": "whatsapp:+4917", "From": "whatsapp:+14155238886", "Body": "a"},
        {"To": "whatsapp:+4917", "From": "whatsapp:+14155238886", "Body": "b"},
    ]


# ---------------------------------------------------------------- Discord

SIGNING = SigningKey(bytes(range(32)))
PUBLIC = SIGNING.verify_key.encode(HexEncoder).decode()
SIGNED_AT = 1_700_000_000
NOW = datetime.fromtimestamp(SIGNED_AT, UTC)  # the runner's clock, passed in


def signed(body: bytes, timestamp: str = str(SIGNED_AT), key: SigningKey = SIGNING) -> tuple:
    return key.sign(timestamp.encode() + body).signature.hex(), timestamp, body


def interaction(**fields) -> bytes:
    base = {
        "id": "1100",
        "application_id": "2200",
        "token": "tok-en",
        "type": 2,
        "channel_id": "3300",
        "member": {"user": {"id": "4400", "username": "ada", "global_name": "Ada"}},
        "data": {
            "name": "ask",
            "type": 1,
            "options": [
                {"name": "question", "type": 3, "value": "When do you open?"},
                {"name": "role", "type": 3, "value": "Sales"},
            ],
        },
    }
    return json.dumps({**base, **fields}).encode()


def test_a_signed_interaction_verifies():
    assert discord.check_signature(PUBLIC, *signed(b'{"type":1}'), NOW).signed


@pytest.mark.parametrize(
    "args",
    [
        (lambda s, t, b: (s, t, b + b" ")),
        (lambda s, t, b: (s, "1700000001", b)),
        (lambda s, t, b: (signed(b, key=SigningKey(bytes(32)))[0], t, b)),
        (lambda s, t, b: ("zz" * 64, t, b)),
        (lambda s, t, b: ("ab", t, b)),
        (lambda s, t, b: (None, t, b)),
        (lambda s, t, b: (s, None, b)),
    ],
)
def test_a_bad_or_missing_discord_signature_is_refused(args):
    assert not discord.check_signature(PUBLIC, *args(*signed(b'{"type":1}')), NOW).accepted


def test_without_a_public_key_nothing_verifies():
    assert not discord.check_signature("", *signed(b'{"type":1}'), NOW).accepted


@pytest.mark.parametrize(
    "seconds_from_now",
    [-300, -299, -240, -1, 0, 1, 240, 299, 300],
)
def test_a_timestamp_within_five_minutes_of_now_is_accepted(seconds_from_now):
    timestamp = str(SIGNED_AT + seconds_from_now)
    assert discord.check_signature(PUBLIC, *signed(b'{"type":1}', timestamp), NOW).signed


@pytest.mark.parametrize(
    ("timestamp", "why"),
    [
        ("1000000000", "behind"),  # 2001-09-09
        (str(int((NOW + timedelta(days=3652)).timestamp())), "ahead of"),  # ten years ahead
        (str(SIGNED_AT - 360), "360 s behind"),  # six minutes old: a replay
        (str(SIGNED_AT - 301), "301 s behind"),
        (str(SIGNED_AT + 301), "301 s ahead of"),
        ("0", "behind"),
    ],
)
def test_a_signed_timestamp_more_than_five_minutes_off_is_refused(timestamp, why):
    verdict = discord.check_signature(PUBLIC, *signed(b'{"type":1}', timestamp), NOW)
    assert not verdict.accepted
    assert why in verdict.reason
    assert "X-Signature-Timestamp" in verdict.reason


@pytest.mark.parametrize(
    "timestamp",
    [
        "yesterday",
        "1700000000.5",
        "1.7e9",
        "-1700000000",
        " 1700000000",
        "1700000000\n",
        "\u0661\u0667\u0660\u0660",  # Arabic-Indic digits: isdigit(), but not Unix seconds
        "1" * 5000,
        "+1700000000",
        "0x6553f100",
    ],
)
def test_a_signed_timestamp_that_is_not_whole_unix_seconds_is_refused(timestamp):
    verdict = discord.check_signature(PUBLIC, *signed(b'{"type":1}', timestamp), NOW)
    assert not verdict.accepted
    assert verdict.reason == "the X-Signature-Timestamp is not a whole number of Unix seconds"


def test_a_forged_request_is_reported_as_a_bad_signature_whatever_its_timestamp():
    signature, _, body = signed(b'{"type":1}', key=SigningKey(bytes(32)))
    verdict = discord.check_signature(PUBLIC, signature, "1000000000", body, NOW)
    assert verdict.reason == "the signature does not verify under DISCORD_PUBLIC_KEY"


def test_ping_and_ask_are_read():
    assert isinstance(discord.parse_interaction(b'{"type": 1}'), discord.Ping)
    message = discord.parse_interaction(interaction())
    assert message.channel == "discord" and message.delivery_id == "1100"
    assert message.text == "When do you open?" and message.requested_role == "sales"
    assert message.sender == "4400" and message.sender_name == "Ada"
    assert message.reply_via == {"application_id": "2200", "token": "tok-en"}


def test_a_direct_message_names_its_user():
    body = json.loads(interaction())
    del body["member"]
    body["user"] = {"id": "77", "username": "bob"}
    assert discord.parse_interaction(json.dumps(body).encode()).sender == "77"


def test_other_commands_and_components_are_answered_at_once_with_what_is_understood():
    other = discord.parse_interaction(interaction(data={"name": "weather"}))
    component = discord.parse_interaction(interaction(type=3, data={"custom_id": "x"}))
    for parsed in (other, component):
        assert isinstance(parsed, discord.Immediate)
        assert parsed.response["type"] == 4
        assert "/ask" in parsed.response["data"]["content"]
        assert parsed.response["data"]["flags"] == discord.EPHEMERAL
    autocomplete = discord.parse_interaction(interaction(type=4))
    assert autocomplete.response == {"type": 8, "data": {"choices": []}}


@pytest.mark.parametrize(
    "body",
    [b"{", b"[]", b'{"id": "1"}', b'{"type": "2"}', interaction(token=None)],
)
def test_what_is_not_an_interaction_is_a_bad_shape(body):
    with pytest.raises(BadShape):
        discord.parse_interaction(body)


def test_the_ask_command_offers_only_customer_roles():
    roles = [r for r in BUILT_IN.values() if "discord" in r.channels]
    command = discord.ask_command(roles)
    [question, role] = command["options"]
    assert question["required"] is True
    assert [c["value"] for c in role["choices"]] == ["secretary", "sales", "support"]
