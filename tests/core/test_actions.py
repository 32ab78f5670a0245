"""Outbound actions, pure: the three kinds, the settings they may reach (rule 12), and
proposals read from a role's reply. The address rules: tests/core/test_targets.py."""

import pytest

from ragcore.actions.autonomy import ActingRole, AutonomyConfig
from ragcore.actions.effects import Sent
from ragcore.actions.kinds import (
    Catalog,
    ChatopsAction,
    EmailAction,
    WebhookAction,
    action_json,
    check_action,
    preview,
    recipient_allowed,
)
from ragcore.actions.proposals import (
    offer_for,
    proposal_instructions,
    read_proposal,
    split_proposal,
)
from ragcore.actions.sends import post_sent
from ragcore.employees.sensitivity import Sensitivity
from ragcore.errors import InvalidInput
from ragcore.retry import Outcome
from ragcore.settings import SettingsError, load_settings

CATALOG = Catalog(
    webhook_targets=(("crm", "https://crm.example.com/in"), ("tickets", "https://t.example.com")),
    email_recipients=("owner@shop.example", "@partners.example"),
    email_missing=(),
    chatops=True,
)


# ---------------------------------------------------------------- kinds


def test_each_kind_is_read_from_json_and_back():
    webhook = check_action({"kind": "webhook", "target": "crm", "data": {"lead": "Ann"}})
    email = check_action(
        {"kind": "email", "to": "Owner@Shop.Example", "subject": "Call back", "body": "Ann, 5pm"}
    )
    chatops = check_action({"kind": "chatops", "text": "New lead: Ann"})
    assert webhook == WebhookAction("crm", {"lead": "Ann"})
    assert email == EmailAction("Owner@shop.example", "Call back", "Ann, 5pm")
    assert chatops == ChatopsAction("New lead: Ann")
    for action in (webhook, email, chatops):
        assert check_action(action_json(action)) == action


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "sms", "text": "hi"}, "kind"),
        ({"kind": "webhook", "target": "https://evil.example/hook"}, "target"),
        ({"kind": "webhook", "url": "https://evil.example/hook", "target": "crm"}, "url"),
        ({"kind": "webhook", "target": "crm", "data": "not an object"}, "data"),
        ({"kind": "email", "to": "a@shop.example\nBcc: x@evil.example", "subject": "s",
          "body": "b"}, "to"),
        ({"kind": "email", "to": "a@shop.example, x@evil.example", "subject": "s",
          "body": "b"}, "to"),
        ({"kind": "email", "to": "a@shop.example", "subject": "hi\r\nBcc: x@evil.example",
          "body": "b"}, "subject"),
        ({"kind": "email", "to": "a@shop.example", "subject": "a, b", "body": "b"}, "subject"),
        ({"kind": "email", "to": "Ann <a@shop.example>", "subject": "s", "body": "b"}, "to"),
        ({"kind": "email", "to": "a@shop.example", "subject": "s", "body": "  "}, "body"),
        ({"kind": "chatops", "text": "x" * 4001}, "text"),
    ],
)  # fmt: skip
def test_bad_actions_are_refused_naming_the_field(body, field):
    with pytest.raises(InvalidInput) as refused:
        check_action(body)
    assert refused.value.field == field


def test_recipients_match_whole_addresses_or_exactly_the_domain():
    allowed = ("owner@shop.example", "@partners.example")
    assert recipient_allowed("owner@shop.example", allowed)
    assert recipient_allowed("OWNER@Shop.Example", allowed)
    assert recipient_allowed("anyone@partners.example", allowed)
    assert not recipient_allowed("other@shop.example", allowed)
    assert not recipient_allowed("x@sales.partners.example", allowed)  # not subdomains
    assert not recipient_allowed("x@partners.example.evil.com", allowed)
    assert not recipient_allowed("x@evilpartners.example", allowed)
    assert not recipient_allowed("owner@shop.example", ())  # empty list: nobody


def test_the_catalog_refuses_what_the_settings_do_not_reach():
    assert CATALOG.refusal(WebhookAction("crm")) is None
    assert "no webhook target named 'erp'" in CATALOG.refusal(WebhookAction("erp"))
    assert CATALOG.refusal(EmailAction("a@partners.example", "s", "b")) is None
    assert "not on EMAIL_ALLOWED_RECIPIENTS" in CATALOG.refusal(
        EmailAction("someone@else.example", "s", "b")
    )
    assert CATALOG.refusal(ChatopsAction("hi")) is None
    nothing = Catalog()
    assert "SMTP_HOST and EMAIL_FROM" in nothing.refusal(EmailAction("a@b.example", "s", "b"))
    assert nothing.refusal(ChatopsAction("hi")) == "CHATOPS_WEBHOOK_URL is not set"
    assert "none are configured" in nothing.refusal(WebhookAction("crm"))
    assert nothing.configured_kinds() == ()
    no_recipients = Catalog(email_missing=())
    assert "EMAIL_ALLOWED_RECIPIENTS is empty" in no_recipients.refusal(
        EmailAction("a@b.example", "s", "b")
    )
    plain = Catalog(webhook_targets=(("crm", "http://crm.example.com"),))
    assert "not an https:// URL" in plain.refusal(WebhookAction("crm"))


def test_webhook_targets_must_be_https_names_at_start():
    with pytest.raises(SettingsError) as bad:
        load_settings({"WEBHOOK_TARGETS": "crm=http://crm.example.com/hook"})
    assert "name=https://… pairs" in str(bad.value)
    settings = load_settings(
        {
            "WEBHOOK_TARGETS": "crm=https://crm.example.com/in",
            "SMTP_HOST": "smtp.example.com",
            "EMAIL_FROM": "bot@shop.example",
            "EMAIL_ALLOWED_RECIPIENTS": "@shop.example",
        }
    )
    catalog = Catalog.from_settings(settings)
    assert catalog.configured_kinds() == ("webhook", "email")
    assert settings.approval_ttl_hours == 24
    assert settings.actions_allow_private_targets is False
    assert settings.smtp_security == "starttls"


def test_preview_is_short():
    text = preview(EmailAction("a@b.example", "Hello", "x" * 1000), limit=100)
    assert text.startswith("Subject: Hello\n") and len(text) == 100 and text.endswith("…")


# ---------------------------------------------------------------- proposals

SEMI = AutonomyConfig(mode="semi")
SUPPORT = ActingRole("support", "semi", Sensitivity(False, "none"))


def test_an_offer_names_targets_and_recipients_never_urls():
    offer = offer_for(CATALOG, SEMI, SUPPORT)
    assert offer.kinds == ("webhook", "email", "chatops") and offer.level == "semi"
    text = proposal_instructions(offer)
    assert "crm, tickets" in text
    assert "owner@shop.example" in text and "any address at partners.example" in text
    assert "https://" not in text
    assert "owner's approval" in text


def test_no_offer_when_the_role_cannot_act_or_nothing_is_configured():
    assert offer_for(CATALOG, AutonomyConfig(mode="off"), SUPPORT) is None
    assert offer_for(CATALOG, SEMI, ActingRole("ceo", "off", Sensitivity(False, "none"))) is None
    assert offer_for(Catalog(), SEMI, SUPPORT) is None
    only_email = AutonomyConfig(mode="full", allowed_kinds=("email",))
    assert offer_for(CATALOG, only_email, SUPPORT).kinds == ("email",)


def test_the_proposal_block_is_removed_from_the_reply():
    reply = (
        "We will call you back tomorrow [1].\n"
        '<action>{"kind": "chatops", "text": "Call Ann back"}</action>'
    )
    text, raw = split_proposal(reply)
    assert text == "We will call you back tomorrow [1]."
    assert raw == '{"kind": "chatops", "text": "Call Ann back"}'
    cut_short = split_proposal('Sure [1]. <action>{"kind": "chat')
    assert cut_short == ("Sure [1].", None)
    assert split_proposal("No action here.") == ("No action here.", None)


def test_a_valid_offered_proposal_is_kept_anything_else_dropped():
    offer = offer_for(CATALOG, SEMI, SUPPORT)
    keep = read_proposal('{"kind": "webhook", "target": "crm", "data": {"x": 1}}', offer, CATALOG)
    assert keep == WebhookAction("crm", {"x": 1})
    dropped = [
        '{"kind": "webhook", "target": "https://evil.example/x"}',  # a URL, not a name
        '{"kind": "webhook", "target": "erp"}',  # not configured
        '{"kind": "email", "to": "x@evil.example", "subject": "s", "body": "b"}',
        '{"kind": "email", "to": "x@sub.partners.example", "subject": "s", "body": "b"}',
        '{"kind": "sms", "text": "hi"}',
        "not json",
        '["chatops"]',
    ]
    for raw in dropped:
        assert read_proposal(raw, offer, CATALOG) is None, raw
    only_email = offer_for(CATALOG, AutonomyConfig(mode="semi", allowed_kinds=("email",)), None)
    assert read_proposal('{"kind": "chatops", "text": "hi"}', only_email, CATALOG) is None
    assert read_proposal('{"kind": "chatops", "text": "hi"}', None, CATALOG) is None


# ---------------------------------------------------------------- a POST's result


def test_a_post_counts_as_sent_only_on_2xx_and_otherwise_says_why_naming_the_host():
    name, host = 'webhook "crm"', "crm.example.com"
    assert post_sent(name, host, Outcome(204)) == Sent(
        True, 'webhook "crm" (crm.example.com) answered HTTP 204'
    )
    assert post_sent(name, host, Outcome(500)).detail.endswith("answered HTTP 500")
    redirect = post_sent(name, host, Outcome(302))
    assert not redirect.ok and "which is not followed" in redirect.detail
    refused = post_sent(name, host, Outcome(refused="127.0.0.1 is a loopback address"))
    assert refused == Sent(False, 'webhook "crm": 127.0.0.1 is a loopback address')
    slow = post_sent(name, host, Outcome(timed_out=True, failure="no answer within 10 s"))
    assert slow == Sent(False, 'webhook "crm" (crm.example.com): no answer within 10 s')
