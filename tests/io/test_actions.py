"""Each action kind against a real receiver on 127.0.0.1, and every refused target.

Webhook targets and chat-ops are https receivers (Hypercorn with a certificate from a
test authority that the service trusts through ACTIONS_CA_BUNDLE); e-mail goes to an
aiosmtpd server that requires STARTTLS and a login. Actions are submitted through
``POST /actions`` with the autonomy in ``full``, so each one is sent at once."""

from __future__ import annotations

import json
import logging

import attrs
import pytest
import trio

from tests.io.actions import log_of, set_autonomy, use_resolver
from tests.io.fakes.action_receivers import Redirector, SmtpServer, serve_https
from tests.io.fakes.workflow_receiver import WorkflowReceiver

LEAD = {"name": "Ann", "phone": "+44 20 7946 0000"}


@pytest.fixture
def resolver(monkeypatch):
    return use_resolver(monkeypatch)


@pytest.fixture
async def hooks(nursery, authority):
    """The webhook target's receiver, answering as hooks.example.test and 127.0.0.1."""
    receiver = WorkflowReceiver()
    async with serve_https(receiver, nursery, authority, "hooks.example.test", "127.0.0.1") as port:
        receiver.base_url = f"https://hooks.example.test:{port}"
        receiver.port = port
        yield receiver


@pytest.fixture
async def chatops(nursery, authority):
    receiver = WorkflowReceiver()
    async with serve_https(receiver, nursery, authority, "chatops.example.test") as port:
        receiver.base_url = f"https://chatops.example.test:{port}"
        yield receiver


@pytest.fixture
def smtp(authority):
    with SmtpServer(authority) as server:
        yield server


@pytest.fixture
def settings_overrides(request, hooks, chatops, smtp, authority, resolver):
    """Everything configured, the test authority trusted, and (as the issue allows for
    receivers on 127.0.0.1) ACTIONS_ALLOW_PRIVATE_TARGETS on unless a test turns it off
    with ``@pytest.mark.parametrize("settings_overrides", [{…}], indirect=True)``."""
    settings = {
        "webhook_targets": (
            f"crm={hooks.base_url}/in/s3cret?token=abc,"
            f"loopback=https://127.0.0.1:{hooks.port}/in,"
            f"internal=https://internal.example.test:{hooks.port}/in,"
            "nowhere=https://unknown-host.example.test/in"
        ),
        "chatops_webhook_url": f"{chatops.base_url}/services/T000/B000/XXXX",
        "smtp_host": "127.0.0.1",
        "smtp_port": smtp.port,
        "smtp_user": smtp.user,
        "smtp_password": smtp.password,
        "email_from": "assistant@shop.example",
        "email_allowed_recipients": "owner@shop.example,@partners.example",
        "actions_ca_bundle": str(authority.bundle),
        "actions_allow_private_targets": "true",
        "actions_timeout_seconds": 5,
    }
    return {**settings, **getattr(request, "param", {})}


@pytest.fixture
async def full(api):
    await set_autonomy(api, mode="full")
    return api


PRIVATE_OFF = {"actions_allow_private_targets": "false"}


# ---------------------------------------------------------------- webhook


async def test_a_webhook_goes_to_the_named_target_on_the_address_checked(
    full, hooks, resolver, caplog
):
    caplog.set_level(logging.WARNING)
    response = await full.post("/actions", json={"kind": "webhook", "target": "crm", "data": LEAD})
    assert response.status_code == 200, response.text
    action = response.json()
    assert action["status"] == "executed" and action["summary"] == 'webhook "crm"'
    [request] = hooks.requests
    assert request.method == "POST" and request.path == "/in/s3cret"
    assert request.query == {"token": ["abc"]}
    # TLS and Host carry the name (the certificate is for hooks.example.test only) ...
    assert request.headers["host"] == f"hooks.example.test:{hooks.port}"
    assert request.headers["x-ragchat-action"] == action["id"]
    assert request.body["data"] == LEAD and request.body["target"] == "crm"
    assert request.body["action_id"] == action["id"]
    # ... while the name was looked up once, and the connection went to that address
    assert resolver.lookups == ["hooks.example.test"]
    # the address check is off for this receiver on 127.0.0.1, and every call says so
    assert "ACTIONS_ALLOW_PRIVATE_TARGETS=true: calling webhook" in caplog.text
    assert "s3cret" not in caplog.text and "token=abc" not in caplog.text
    events = [event for event, _ in await log_of(full, action["id"])]
    assert events == ["allowed", "executed"]


@pytest.mark.parametrize("settings_overrides", [PRIVATE_OFF], indirect=True)
async def test_127_0_0_1_is_refused_when_the_address_check_is_on(full, hooks):
    response = await full.post("/actions", json={"kind": "webhook", "target": "loopback"})
    assert response.status_code == 502
    problem = response.json()
    assert "127.0.0.1 is a loopback address" in problem["detail"]
    assert "ACTIONS_ALLOW_PRIVATE_TARGETS is off" in problem["detail"]
    assert hooks.requests == []
    [*_, (event, detail)] = await log_of(full, problem["action_id"])
    assert event == "failed" and "loopback" in detail


@pytest.mark.parametrize("settings_overrides", [PRIVATE_OFF], indirect=True)
async def test_a_name_that_resolves_to_a_private_address_is_refused(full, hooks, resolver):
    response = await full.post("/actions", json={"kind": "webhook", "target": "internal"})
    assert response.status_code == 502
    assert "10.0.0.5 is a private address" in response.json()["detail"]
    assert resolver.lookups == ["internal.example.test"] and hooks.requests == []


async def test_an_unknown_target_name_is_refused_and_logged(full, hooks):
    response = await full.post("/actions", json={"kind": "webhook", "target": "erp"})
    assert response.status_code == 422
    problem = response.json()
    assert "no webhook target named 'erp'" in problem["detail"]
    assert "crm, loopback, internal, nowhere" in problem["detail"]
    reason = problem["detail"].removeprefix("the action was refused: ")
    assert await log_of(full, problem["action_id"]) == [("refused", reason)]
    assert hooks.requests == []


async def test_a_url_instead_of_a_name_is_refused(full, hooks):
    body = {"kind": "webhook", "target": f"{hooks.base_url}/in/s3cret"}
    response = await full.post("/actions", json=body)
    assert response.status_code == 422 and response.json()["field"] == "target"
    assert hooks.requests == []


async def test_a_name_that_does_not_resolve_fails_with_the_reason(full):
    response = await full.post("/actions", json={"kind": "webhook", "target": "nowhere"})
    assert response.status_code == 502
    assert "the name could not be resolved" in response.json()["detail"]


@pytest.mark.parametrize("settings_overrides", [{"actions_ca_bundle": ""}], indirect=True)
async def test_a_certificate_from_an_authority_not_trusted_is_refused(full, hooks):
    response = await full.post("/actions", json={"kind": "webhook", "target": "crm"})
    assert response.status_code == 502
    assert "TLS certificate is not trusted" in response.json()["detail"]
    assert hooks.requests == []


async def test_redirects_are_not_followed(api, nursery, authority, hooks, service, monkeypatch):
    redirector = Redirector(f"{hooks.base_url}/in/s3cret")
    async with serve_https(redirector, nursery, authority, "hooks.example.test") as port:
        targets = (("crm", f"https://hooks.example.test:{port}/moved"),)
        monkeypatch.setattr(service, "settings", _evolve(service.settings, webhook_targets=targets))
        await set_autonomy(api, mode="full")
        response = await api.post("/actions", json={"kind": "webhook", "target": "crm"})
    assert response.status_code == 502
    assert "redirect (HTTP 307), which is not followed" in response.json()["detail"]
    assert len(redirector.requests) == 1 and hooks.requests == []


@pytest.mark.parametrize("settings_overrides", [{"actions_timeout_seconds": 0.5}], indirect=True)
async def test_a_slow_target_times_out(full, hooks):
    hooks.delay = 10
    with trio.fail_after(5):
        response = await full.post("/actions", json={"kind": "webhook", "target": "crm"})
    assert response.status_code == 502
    detail = response.json()["detail"]
    assert "no answer within 0.5 s" in detail or "timed out after 0.5 s" in detail


async def test_a_failing_target_is_reported_failed_with_the_reason(full, hooks):
    hooks.fail_next(500)
    response = await full.post("/actions", json={"kind": "webhook", "target": "crm"})
    assert response.status_code == 502
    problem = response.json()
    assert problem["action_status"] == "failed" and "answered HTTP 500" in problem["detail"]
    action = (await full.get(f"/actions/{problem['action_id']}")).json()
    assert action["status"] == "failed" and "HTTP 500" in action["reason"]


# ---------------------------------------------------------------- e-mail


async def test_an_email_goes_over_starttls_to_an_allowed_recipient(full, smtp):
    body = {
        "kind": "email",
        "to": "owner@shop.example",
        "subject": "Callback for Ann",
        "body": "Ann asked to be called back at 5pm.",
    }
    response = await full.post("/actions", json=body)
    assert response.status_code == 200, response.text
    [received] = smtp.messages
    assert received.tls and smtp.logins == ["mailer"]
    assert received.sender == "assistant@shop.example"
    assert received.recipients == ("owner@shop.example",)
    message = received.message
    assert message["Subject"] == "Callback for Ann" and message["To"] == "owner@shop.example"
    assert message["From"] == "assistant@shop.example"
    assert message.get_payload(decode=True).decode().strip() == body["body"]
    assert message["X-Ragchat-Action"] == response.json()["id"]


@pytest.mark.parametrize(
    "to", ["someone@else.example", "x@sales.partners.example", "owner@shop.example.evil.com"]
)
async def test_a_recipient_off_the_list_is_refused(full, smtp, to):
    body = {"kind": "email", "to": to, "subject": "Hi", "body": "Hello"}
    response = await full.post("/actions", json=body)
    assert response.status_code == 422
    assert "not on EMAIL_ALLOWED_RECIPIENTS" in response.json()["detail"]
    assert smtp.messages == []


async def test_a_whole_partner_domain_is_allowed(full, smtp):
    body = {"kind": "email", "to": "desk@partners.example", "subject": "Hi", "body": "Hello"}
    assert (await full.post("/actions", json=body)).status_code == 200
    assert smtp.messages[0].recipients == ("desk@partners.example",)


@pytest.mark.parametrize(
    "field, value",
    [("to", "owner@shop.example\r\nBcc: spy@evil.example"), ("to", "owner@shop.example,x@y.z"),
     ("subject", "Hi\r\nBcc: spy@evil.example"), ("subject", "Hi, there")],
)  # fmt: skip
async def test_newlines_and_commas_are_refused(full, smtp, field, value):
    body = {"kind": "email", "to": "owner@shop.example", "subject": "Hi", "body": "Hello"}
    response = await full.post("/actions", json={**body, field: value})
    assert response.status_code == 422 and response.json()["field"] == field
    assert smtp.messages == []


@pytest.mark.parametrize("settings_overrides", [{"email_allowed_recipients": ""}], indirect=True)
async def test_an_empty_allow_list_sends_nothing(full, smtp):
    body = {"kind": "email", "to": "owner@shop.example", "subject": "Hi", "body": "Hello"}
    response = await full.post("/actions", json=body)
    assert response.status_code == 422
    assert "EMAIL_ALLOWED_RECIPIENTS is empty" in response.json()["detail"]
    assert smtp.messages == []


async def test_a_wrong_smtp_password_fails_with_the_reason(full, smtp, service, monkeypatch):
    monkeypatch.setattr(service, "settings", _evolve(service.settings, smtp_password="nope"))
    body = {"kind": "email", "to": "owner@shop.example", "subject": "Hi", "body": "Hello"}
    response = await full.post("/actions", json=body)
    assert response.status_code == 502 and "refused the login" in response.json()["detail"]
    assert "nope" not in response.text and smtp.messages == []


async def test_implicit_tls(api, authority, service, monkeypatch):
    with SmtpServer(authority, implicit_tls=True) as server:
        changed = _evolve(service.settings, smtp_port=server.port, smtp_security="tls")
        monkeypatch.setattr(service, "settings", changed)
        await set_autonomy(api, mode="full")
        body = {"kind": "email", "to": "owner@shop.example", "subject": "Hi", "body": "Hello"}
        response = await api.post("/actions", json=body)
    assert response.status_code == 200, response.text
    assert server.messages[0].tls


async def test_mail_is_never_sent_in_clear(api, authority, service, monkeypatch):
    with SmtpServer(authority, offer_starttls=False) as server:
        monkeypatch.setattr(service, "settings", _evolve(service.settings, smtp_port=server.port))
        await set_autonomy(api, mode="full")
        body = {"kind": "email", "to": "owner@shop.example", "subject": "Hi", "body": "Hello"}
        response = await api.post("/actions", json=body)
    assert response.status_code == 502
    assert "does not offer STARTTLS" in response.json()["detail"]
    assert server.messages == []


# ---------------------------------------------------------------- chat-ops


async def test_a_chatops_message_is_posted(full, chatops):
    response = await full.post("/actions", json={"kind": "chatops", "text": "New lead: Ann"})
    assert response.status_code == 200, response.text
    [request] = chatops.requests
    assert request.path == "/services/T000/B000/XXXX"
    assert request.body == {"text": "New lead: Ann"}
    # the chat-ops URL is a secret: no response or log entry holds it
    assert "XXXX" not in response.text
    entries = (await full.get("/autonomy/log")).json()["entries"]
    assert "XXXX" not in json.dumps(entries)


@pytest.mark.parametrize("settings_overrides", [{"chatops_webhook_url": ""}], indirect=True)
async def test_nothing_is_sent_where_nothing_is_configured(full, chatops):
    response = await full.post("/actions", json={"kind": "chatops", "text": "hello"})
    assert response.status_code == 422
    assert response.json()["detail"].endswith("CHATOPS_WEBHOOK_URL is not set")
    assert chatops.requests == []


def _evolve(settings, **changes):
    return attrs.evolve(settings, **changes)
