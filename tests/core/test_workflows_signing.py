"""The body a workflow receives and its Standard Webhooks signature, checked with the
reference library (``standardwebhooks``), and the WORKFLOW_SIGNING_SECRET setting."""

import base64
import json
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from ragcore.settings import SettingsError, load_settings, signing_key
from ragcore.workflows.payload import request_headers, signature, workflow_body

KEY = bytes(range(32))
WHSEC = "whsec_" + base64.b64encode(KEY).decode()
NOW = int(datetime.now(UTC).timestamp())  # the library checks the timestamp against its clock


def test_the_body_is_the_four_fields_as_utf8_json():
    body = workflow_body("telegram", "Où est ma commande ?", "Elle arrive demain [1].", {"a": 1})
    assert json.loads(body) == {
        "channel": "telegram",
        "message": "Où est ma commande ?",
        "ai_reply": "Elle arrive demain [1].",
        "context": {"a": 1},
    }
    assert "Où".encode() in body  # UTF-8, not \u escapes


def test_a_context_value_json_cannot_hold_is_sent_as_text_not_an_error():
    when = datetime(2026, 11, 22, tzinfo=UTC)
    body = json.loads(workflow_body("discord", "m", "r", {"at": when, "tags": {"vip"}}))
    assert body["context"] == {"at": str(when), "tags": "{'vip'}"}


def test_a_whsec_secret_is_verified_by_the_reference_library_as_given():
    body = workflow_body("whatsapp", "Hi", "Hello!", {"role": "support"})
    headers = request_headers(body, signing_key(WHSEC), "msg_1", NOW)
    assert Webhook(WHSEC).verify(body, headers) == json.loads(body)


def test_a_plain_text_secret_signs_with_its_utf8_bytes():
    secret = "correct horse battery staple"
    body = workflow_body("telegram", "Hi", "Hello!", {})
    headers = request_headers(body, signing_key(secret), "msg_2", NOW)
    Webhook(secret.encode()).verify(body, headers)  # the library takes raw key bytes


def test_a_changed_body_id_timestamp_or_key_fails_verification():
    body = workflow_body("telegram", "Hi", "Hello!", {})
    headers = request_headers(body, KEY, "msg_3", NOW)
    hook = Webhook(WHSEC)
    with pytest.raises(WebhookVerificationError):
        hook.verify(body.replace(b"Hello", b"Hullo"), headers)
    with pytest.raises(WebhookVerificationError):
        hook.verify(body, {**headers, "webhook-id": "msg_4"})
    with pytest.raises(WebhookVerificationError):
        hook.verify(body, {**headers, "webhook-timestamp": str(NOW + 1)})
    with pytest.raises(WebhookVerificationError):
        Webhook(bytes(32)).verify(body, headers)


def test_the_signature_matches_the_specs_formula():
    # the library's own signer, on the same id, time and text
    body = b'{"channel":"telegram"}'
    when = datetime.fromtimestamp(1674087231, UTC)
    expected = Webhook(WHSEC).sign("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", when, body.decode())
    assert signature(KEY, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", 1674087231, body) == expected


def test_unsigned_calls_carry_no_authentication_header_at_all():
    headers = request_headers(b"{}", None, "msg_5", NOW)
    assert set(headers) == {"content-type", "user-agent"}
    assert headers["content-type"] == "application/json"


def test_signed_calls_carry_the_three_headers():
    headers = request_headers(b"{}", KEY, "msg_6", NOW)
    assert headers["webhook-id"] == "msg_6"
    assert headers["webhook-timestamp"] == str(NOW)
    assert headers["webhook-signature"].startswith("v1,")
    assert "authorization" not in headers


@pytest.mark.parametrize(
    "secret, says",
    [
        ("short", "at least 16"),
        ("whsec_" + base64.b64encode(b"tiny").decode(), "at least 16"),
        ("whsec_not base64!", "base64"),
    ],
)
def test_a_bad_signing_secret_is_refused_at_start_naming_the_setting(secret, says):
    with pytest.raises(ValueError, match=says):
        signing_key(secret)
    with pytest.raises(SettingsError) as raised:
        load_settings({"WORKFLOW_SIGNING_SECRET": secret})
    [problem] = raised.value.problems
    assert problem.startswith("WORKFLOW_SIGNING_SECRET:") and says in problem
    assert secret not in problem  # the value itself is not echoed


def test_the_signing_secret_is_optional_and_never_shown():
    assert load_settings({}).workflow_signing_secret == ""
    settings = load_settings({"WORKFLOW_SIGNING_SECRET": WHSEC})
    assert settings.workflow_signing_secret == WHSEC
    assert WHSEC not in repr(settings)
    unpadded = WHSEC.rstrip("=")
    assert signing_key(unpadded) == KEY  # padding may be left off, as the library allows
