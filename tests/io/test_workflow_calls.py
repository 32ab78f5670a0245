"""The workflow calls made after a reply (``fire_workflows``), against a receiver on
127.0.0.1: who is called and with what, retries, the timeout, signing, that a broken or
slow workflow never raises to the caller, and that a call reaches only an address the
rules allow, checked at every call (a stored workflow is checked again).

The receivers are a workflow engine on this host, so WORKFLOW_ALLOW_PRIVATE_TARGETS is on
unless a test turns it off."""

from __future__ import annotations

import base64
import json
import logging
import socket

import attrs
import psycopg
import pytest
import trio
from standardwebhooks.webhooks import Webhook

from ragcore.retry import RetryPolicy
from ragio.targets import post
from ragio.workflows.dispatch import fire_workflows
from tests.io.actions import use_resolver
from tests.io.fakes.action_receivers import Redirector, serve_https
from tests.io.fakes.workflow_receiver import WorkflowReceiver

# fast retries and a short timeout, so no test waits the real 1 s, 2 s and 10 s
QUICK = RetryPolicy(timeout_seconds=0.5, backoff_seconds=0.01)
WHSEC = "whsec_" + base64.b64encode(bytes(range(24))).decode()
CONTEXT = {"role": "support", "chat_id": 42, "citations": [{"number": 1, "document": "faq.md"}]}
EXPECTED = {
    "channel": "telegram",
    "message": "When do you open?",
    "ai_reply": "We open at 9 am [1].",
    "context": CONTEXT,
}


OFF = {"workflow_allow_private_targets": "false"}


@pytest.fixture
def settings_overrides(request):
    """WORKFLOW_ALLOW_PRIVATE_TARGETS on (the receivers are on 127.0.0.1); a test changes
    settings with ``@pytest.mark.parametrize("settings_overrides", [{…}], indirect=True)``."""
    return {"workflow_allow_private_targets": "true", **getattr(request, "param", {})}


@pytest.fixture
def resolver(monkeypatch):
    return use_resolver(monkeypatch)


def with_settings(service, **changes):
    """The service with ``changes`` to its settings, as after a restart with them."""
    return attrs.evolve(service, settings=attrs.evolve(service.settings, **changes))


def stored(database_url, url, name="stored"):
    """A workflow written straight to the table, past the checks of the API: as one saved
    before the address rules existed, or under other settings."""
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO automation_workflows (name, webhook_url, channels) VALUES (%s, %s, %s)",
            (name, url, ["telegram"]),
        )


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def add(api, url, channels=("telegram",), is_active=True, name="hook"):
    response = await api.post(
        "/automation-workflows",
        json={"name": name, "webhook_url": url, "channels": list(channels), "is_active": is_active},
    )
    assert response.status_code == 201, response.text
    return response.json()


async def fire(service, channel="telegram", policy=QUICK):
    await fire_workflows(
        service, channel, EXPECTED["message"], EXPECTED["ai_reply"], CONTEXT, policy=policy
    )


async def test_only_active_workflows_on_the_channel_are_called_with_the_exact_payload(
    api, service, receiver
):
    await add(api, receiver.url("/both"), ["whatsapp", "telegram"])
    await add(api, receiver.url("/discord"), ["discord"])
    await add(api, receiver.url("/paused"), ["telegram"], is_active=False)
    await add(api, receiver.url("/tg"), ["telegram"])

    await fire(service)

    assert sorted(r.path for r in receiver.requests) == ["/both", "/tg"]
    for call in receiver.requests:
        assert call.method == "POST"
        assert call.body == EXPECTED
        assert call.headers["content-type"] == "application/json"
        # unsigned by default: no authentication of any kind (SPEC section 5 item 9)
        assert "authorization" not in call.headers
        assert not any(name.startswith("webhook-") for name in call.headers)


async def test_a_channel_that_is_not_wired_calls_nothing(api, service, receiver):
    await add(api, receiver.url("/tg"), ["telegram", "whatsapp", "discord"])
    await fire(service, channel="voice")
    await fire(service, channel="api")
    assert receiver.requests == []


async def test_a_500_is_retried_and_the_second_attempt_delivers(api, service, receiver, caplog):
    await add(api, receiver.url("/flaky"))
    receiver.fail_next(500)
    with caplog.at_level(logging.WARNING):
        await fire(service)
    assert [r.path for r in receiver.requests] == ["/flaky", "/flaky"]
    assert receiver.requests[1].body == EXPECTED
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_429_honours_retry_after_and_gives_up_after_two_retries(
    api, service, receiver, caplog
):
    await add(api, receiver.url("/busy"), name="Busy CRM")
    receiver.fail_next(429, retry_after="0", times=5)
    with caplog.at_level(logging.WARNING):
        await fire(service)
    assert len(receiver.requests) == 3  # the call and two retries, no more
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "Busy CRM" in warning and "HTTP 429" in warning and "3 attempt" in warning


async def test_a_retry_after_beyond_the_bound_is_not_waited_for(api, service, receiver):
    await add(api, receiver.url("/later"))
    receiver.fail_next(503, retry_after="3600")
    with trio.fail_after(5):
        await fire(service)
    assert len(receiver.requests) == 1


async def test_a_client_error_is_not_retried(api, service, receiver):
    await add(api, receiver.url("/gone"))
    receiver.fail_next(404)
    await fire(service)
    assert len(receiver.requests) == 1


async def test_a_hanging_receiver_is_bounded_by_the_timeout(api, service, receiver, caplog):
    await add(api, receiver.url("/hangs"))
    receiver.delay = 60
    started = trio.current_time()
    with caplog.at_level(logging.WARNING), trio.fail_after(10):
        await fire(service)
    # three attempts of 0.5 s each and two short waits, far from the receiver's 60 s
    assert trio.current_time() - started < 5
    assert len(receiver.requests) == 3
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "no answer in time" in warning


async def test_a_closed_port_does_not_raise_and_the_log_shows_no_path_or_token(
    api, service, caplog
):
    with socket.socket() as probe:  # a port nothing listens on any more
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    await add(api, f"http://127.0.0.1:{port}/webhook/abc?token=s3cret", name="Closed")
    with caplog.at_level(logging.WARNING), trio.fail_after(10):
        await fire(service)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "could not connect" in warning and f"http://127.0.0.1:{port}" in warning
    assert "s3cret" not in caplog.text and "/webhook/abc" not in caplog.text


async def test_one_broken_workflow_does_not_stop_the_others(api, service, receiver):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    await add(api, f"http://127.0.0.1:{port}/dead")
    await add(api, receiver.url("/alive"))
    await fire(service)
    assert [r.path for r in receiver.requests] == ["/alive"]


async def test_calls_run_at_most_four_at_once(api, service, receiver):
    for n in range(6):
        await add(api, receiver.url(f"/hook/{n}"))
    receiver.delay = 0.2
    await fire(service)
    assert sorted(r.path for r in receiver.requests) == [f"/hook/{n}" for n in range(6)]
    assert receiver.peak == 4


async def test_signed_calls_verify_with_the_reference_library(api, service, receiver):
    await add(api, receiver.url("/signed"))
    signed = attrs.evolve(
        service, settings=attrs.evolve(service.settings, workflow_signing_secret=WHSEC)
    )
    receiver.fail_next(502)
    await fire(signed)
    first, second = receiver.requests
    for call in (first, second):
        assert Webhook(WHSEC).verify(call.raw, call.headers) == EXPECTED
        assert "authorization" not in call.headers
    # one message, so a receiver can drop a duplicate: the id stays across retries
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.headers["webhook-id"].startswith("msg_")
    assert json.loads(second.raw) == EXPECTED


async def test_cancelling_the_task_stops_the_calls_at_once(api, service, receiver):
    await add(api, receiver.url("/hangs"))
    receiver.delay = 60
    with trio.move_on_after(0.5) as scope:
        await fire(service, policy=RetryPolicy())  # the real 10 s timeout
    assert scope.cancelled_caught
    assert len(receiver.requests) == 1


async def test_a_database_failure_is_logged_not_raised(service, caplog):
    class Down:
        async def run(self, *args):
            raise OSError("database down")

    broken = attrs.evolve(service, database=Down())
    with caplog.at_level(logging.WARNING):
        await fire(broken)
    assert "were not called" in caplog.text


# ---------------------------------------------------------------- which addresses a call reaches

# Every one of these reaches the receiver on 127.0.0.1 when a call may go there.
LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "[::ffff:127.0.0.1]",
    "localhost",
    "hooks.example.test",  # a name that resolves to 127.0.0.1
]


@pytest.mark.parametrize("settings_overrides", [OFF], indirect=True)
@pytest.mark.parametrize("host", [*LOOPBACK_SPELLINGS, "0.0.0.0"])
async def test_a_stored_loopback_target_is_not_called_without_the_setting(
    service, database_url, receiver, resolver, caplog, host
):
    port = receiver.base_url.rsplit(":", 1)[1]
    stored(database_url, f"http://{host}:{port}/webhook/abc?token=s3cret", name="Old CRM")
    with caplog.at_level(logging.WARNING):
        await fire(service)
    assert receiver.requests == []
    [warning] = warnings_of(caplog)
    assert "'Old CRM'" in warning and "was not called: " in warning
    assert "a loopback address; set WORKFLOW_ALLOW_PRIVATE_TARGETS=true" in warning or (
        "0.0.0.0 is an unspecified address; workflow calls never go there" in warning
    )
    assert "s3cret" not in caplog.text and "/webhook/abc" not in caplog.text
    assert resolver.lookups == (["hooks.example.test"] if host == "hooks.example.test" else [])


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
async def test_with_the_setting_every_loopback_spelling_reaches_the_local_receiver(
    service, database_url, receiver, resolver, caplog, host
):
    port = receiver.base_url.rsplit(":", 1)[1]
    stored(database_url, f"http://{host}:{port}/webhook/abc")
    with caplog.at_level(logging.INFO, logger="ragio.targets.post"):
        await fire(service)
    [call] = receiver.requests
    assert call.path == "/webhook/abc" and call.body == EXPECTED
    # each call to a non-public address says so, naming the host, never the path
    assert "as WORKFLOW_ALLOW_PRIVATE_TARGETS=true allows" in caplog.text
    assert "/webhook/abc" not in caplog.text


async def test_0_0_0_0_metadata_and_link_local_stay_refused_with_the_setting_on(
    service, database_url, receiver, resolver, caplog
):
    port = receiver.base_url.rsplit(":", 1)[1]
    for host in (
        "0.0.0.0",
        "169.254.169.254",
        "[fd00:ec2::254]",
        "169.254.10.10",
        "metadata.google.internal",
        "metadata.example.test",  # 127.0.0.1, and 169.254.169.254 too
        "linklocal.example.test",  # 127.0.0.1, and fe80::1 too
    ):
        stored(database_url, f"http://{host}:{port}/hook", name=host)
    with caplog.at_level(logging.WARNING), trio.fail_after(5):
        await fire(service)
    # the two names also resolve to the receiver's address: not one address was tried
    assert receiver.requests == []
    warnings = warnings_of(caplog)
    assert len(warnings) == 7
    assert all("was not called" in w and "never go there" in w for w in warnings)
    assert sum("metadata" in w for w in warnings) == 4
    assert sum("link-local" in w for w in warnings) == 2


async def test_a_workflow_saved_with_the_setting_on_is_not_called_once_it_is_off(
    api, service, receiver
):
    await add(api, receiver.url("/hook"))
    await fire(with_settings(service, workflow_allow_private_targets=False))
    assert receiver.requests == []
    await fire(service)  # on again: called
    assert len(receiver.requests) == 1


@pytest.mark.parametrize("settings_overrides", [OFF], indirect=True)
async def test_a_name_is_checked_again_at_every_call_not_only_when_saved(
    api, service, receiver, monkeypatch, caplog
):
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # public when saved, then rebound

    async def rebinding(host, port):
        return next(answers)

    monkeypatch.setattr(post, "resolve", rebinding)
    port = receiver.base_url.rsplit(":", 1)[1]
    await add(api, f"http://flip.example.test:{port}/hook")
    with caplog.at_level(logging.WARNING):
        await fire(service)
    assert receiver.requests == []
    [warning] = warnings_of(caplog)
    assert "flip.example.test: 127.0.0.1 is a loopback address" in warning


async def test_each_attempt_resolves_once_and_connects_to_the_address_it_checked(
    service, database_url, receiver, resolver
):
    port = receiver.base_url.rsplit(":", 1)[1]
    stored(database_url, f"http://hooks.example.test:{port}/hook")
    receiver.fail_next(503)
    await fire(service)
    # no real DNS knows hooks.example.test: both attempts went to the address checked
    assert [r.path for r in receiver.requests] == ["/hook", "/hook"]
    assert resolver.lookups == ["hooks.example.test", "hooks.example.test"]
    assert receiver.requests[0].headers["host"] == f"hooks.example.test:{port}"


async def test_the_service_itself_is_never_called(service, database_url, receiver, caplog):
    port = int(receiver.base_url.rsplit(":", 1)[1])
    itself = with_settings(service, app_bind="127.0.0.1", app_port=port)  # as if it were
    stored(database_url, f"http://127.0.0.1:{port}/chat")
    with caplog.at_level(logging.WARNING):
        await fire(itself)
    assert receiver.requests == []
    [warning] = warnings_of(caplog)
    assert f"127.0.0.1 port {port} is this service itself" in warning


async def test_a_redirect_is_not_followed_nor_retried(api, service, receiver, serve_fake, caplog):
    redirector = await serve_fake(Redirector(receiver.url("/final")))
    await add(api, redirector.base_url + "/moved", name="Moved")
    with caplog.at_level(logging.WARNING):
        await fire(service)
    assert len(redirector.requests) == 1 and receiver.requests == []
    [warning] = warnings_of(caplog)
    assert "'Moved'" in warning and "HTTP 307 (a redirect, which is not followed)" in warning


async def test_an_https_workflow_checks_the_certificate_of_the_name_on_the_pinned_address(
    api, service, nursery, authority, resolver, caplog
):
    hooks = WorkflowReceiver()
    async with serve_https(hooks, nursery, authority, "hooks.example.test") as port:
        url = f"https://hooks.example.test:{port}/catch"
        await add(api, url)
        with caplog.at_level(logging.WARNING):
            await fire(service)  # the test authority is not trusted: nothing is sent
            assert hooks.requests == []
            assert "its TLS certificate is not trusted" in caplog.text
            await fire(with_settings(service, actions_ca_bundle=str(authority.bundle)))
    [call] = hooks.requests
    assert call.body == EXPECTED and call.headers["host"] == f"hooks.example.test:{port}"


# ---------------------------------------------------------------- the owner's test call

TEST_CALL = {
    "message": "Test call from ragchat: no customer wrote this message.",
    "ai_reply": "Test call from ragchat: this reply was sent to nobody.",
}


async def tried(api, workflow_id) -> dict:
    response = await api.post(f"/automation-workflows/{workflow_id}/test")
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_test_call_posts_a_marked_test_payload_once_even_when_inactive(
    api, service, receiver
):
    workflow = await add(api, receiver.url("/hook/1"), ["whatsapp", "telegram"], is_active=False)
    result = await tried(api, workflow["id"])
    assert result["ok"] is True and result["status"] == 200
    assert result["message"] == "the workflow answered HTTP 200"
    assert 0 <= result["elapsed_ms"] < 10_000
    [call] = receiver.requests
    assert call.method == "POST" and call.path == "/hook/1"
    assert call.body == {
        **TEST_CALL,
        "channel": "whatsapp",  # its first
        "context": {"test": True, "workflow_id": workflow["id"]},
    }
    assert call.headers["content-type"] == "application/json"
    assert not any(name.startswith("webhook-") for name in call.headers)  # unsigned
    await fire(service, channel="whatsapp")  # inactive: a reply still calls nothing
    assert len(receiver.requests) == 1


@pytest.mark.parametrize("settings_overrides", [{"workflow_signing_secret": WHSEC}], indirect=True)
async def test_a_test_call_is_signed_as_a_real_call_is(api, receiver):
    workflow = await add(api, receiver.url("/signed"))
    assert (await tried(api, workflow["id"]))["ok"] is True
    [call] = receiver.requests
    assert Webhook(WHSEC).verify(call.raw, call.headers)["context"]["test"] is True
    assert call.headers["webhook-id"].startswith("msg_")


async def test_a_test_call_answered_500_is_not_ok_and_not_retried(api, receiver):
    workflow = await add(api, receiver.url("/flaky"))
    receiver.fail_next(500)
    result = await tried(api, workflow["id"])
    assert (result["ok"], result["status"]) == (False, 500)
    assert result["message"] == "the workflow answered HTTP 500"
    assert len(receiver.requests) == 1


async def test_an_unreachable_workflow_is_not_ok_and_the_message_keeps_its_path_secret(api):
    with socket.socket() as probe:  # a port nothing listens on any more
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    workflow = await add(api, f"http://127.0.0.1:{port}/webhook/abc?token=s3cret")
    with trio.fail_after(10):
        result = await tried(api, workflow["id"])
    assert (result["ok"], result["status"]) == (False, None)
    assert result["message"].startswith("could not connect")
    assert "s3cret" not in str(result) and "/webhook/abc" not in str(result)


@pytest.mark.parametrize("settings_overrides", [OFF], indirect=True)
async def test_a_refused_target_is_not_called_and_the_result_says_why(api, database_url, receiver):
    port = receiver.base_url.rsplit(":", 1)[1]
    stored(database_url, f"http://127.0.0.1:{port}/webhook/abc?token=s3cret", name="Old CRM")
    [workflow] = (await api.get("/automation-workflows")).json()["workflows"]
    result = await tried(api, workflow["id"])
    assert (result["ok"], result["status"]) == (False, None)
    assert result["message"].startswith("not called: 127.0.0.1 is a loopback address")
    assert "s3cret" not in str(result) and "/webhook" not in str(result)
    assert receiver.requests == []


async def test_testing_an_unknown_workflow_is_404(api):
    for raw in ("999", "abc", "0"):
        response = await api.post(f"/automation-workflows/{raw}/test")
        assert response.status_code == 404, response.text
        assert response.headers["content-type"] == "application/problem+json"
