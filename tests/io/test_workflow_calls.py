"""The workflow calls made after a reply (``fire_workflows``), against a receiver on
127.0.0.1: who is called and with what, retries, the timeout, signing, and that a broken
or slow workflow never raises to the caller."""

from __future__ import annotations

import base64
import json
import logging
import socket

import attrs
import trio
from standardwebhooks.webhooks import Webhook

from ragcore.workflows.delivery import RetryPolicy
from ragio.workflows.dispatch import fire_workflows

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
