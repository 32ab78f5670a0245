"""Automation workflows without a server: what a definition may hold, which workflows
fire for a reply, and when a failed call is tried again."""

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from ragcore.api.queries import stored_id
from ragcore.api.workflows import call_result
from ragcore.converter import converter
from ragcore.errors import InvalidInput
from ragcore.retry import Outcome, RetryPolicy, next_delay, retry_after_seconds
from ragcore.workflows.definitions import (
    WIRED_CHANNELS,
    Filters,
    Workflow,
    WorkflowPatch,
    apply_patch,
    check_filters,
    check_new,
    check_patch,
)
from ragcore.workflows.matching import firing
from ragcore.workflows.payload import workflow_body, workflow_test_body

NOW = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)
ORDER_BOT = {
    "name": "  Order bot ",
    "webhook_url": "https://hooks.example.com/ragchat?token=abc",
    "channels": ["telegram", "Discord", "telegram"],
}


def workflow(id=1, channels=("telegram",), is_active=True):
    return Workflow(id, f"w{id}", f"https://hooks.example.com/{id}", channels, is_active)


# ---------------------------------------------------------------- definitions


def test_a_new_workflow_is_active_unless_told_and_its_fields_are_tidied():
    new = check_new(ORDER_BOT)
    assert new == WorkflowPatch(
        name="Order bot",
        webhook_url="https://hooks.example.com/ragchat?token=abc",
        channels=("telegram", "discord"),  # case ignored, repeats dropped, order kept
        is_active=True,
    )
    assert check_new({**ORDER_BOT, "is_active": False}).is_active is False


def test_a_new_workflow_needs_name_url_and_channels_naming_what_is_missing():
    with pytest.raises(InvalidInput) as err:
        check_new({"channels": ["telegram"]})
    assert err.value.field == "name, webhook_url"
    assert "required" in err.value.message


@pytest.mark.parametrize(
    "body, field, says",
    [
        ({"name": ""}, "name", "blank"),
        ({"name": "   "}, "name", "blank"),
        ({"name": 7}, "name", "text"),
        ({"name": None}, "name", "text"),
        ({"name": "x" * 201}, "name", "200"),
        ({"webhook_url": "ftp://example.com/x"}, "webhook_url", "http:// or https://"),
        ({"webhook_url": "javascript:alert(1)"}, "webhook_url", "http:// or https://"),
        ({"webhook_url": "example.com/hook"}, "webhook_url", "http:// or https://"),
        ({"webhook_url": "https://"}, "webhook_url", "no host"),
        ({"webhook_url": "https:///path"}, "webhook_url", "no host"),
        ({"webhook_url": "https://user:pw@example.com/x"}, "webhook_url", "user:password"),
        ({"webhook_url": "https://token@example.com/x"}, "webhook_url", "user:password"),
        ({"webhook_url": "https://example.com:99999/x"}, "webhook_url", "not a valid URL"),
        ({"webhook_url": "https://exa mple.com/x"}, "webhook_url", "spaces"),
        ({"webhook_url": "https://example.com/\nx"}, "webhook_url", "control"),
        ({"webhook_url": "https://example.com/" + "a" * 2048}, "webhook_url", "2048"),
        ({"webhook_url": ["https://example.com"]}, "webhook_url", "text"),
        ({"channels": "telegram"}, "channels", "list"),
        ({"channels": []}, "channels", "never fires"),
        ({"channels": ["voice"]}, "channels", "voice channel is not wired"),
        ({"channels": ["api"]}, "channels", "POST /chat"),
        ({"channels": ["slack"]}, "channels", "not a wired channel"),
        ({"channels": ["email"]}, "channels", "not a wired channel"),
        ({"channels": ["telegram", "sms"]}, "channels", "unknown channel 'sms'"),
        ({"channels": [3]}, "channels", "not a channel"),
        ({"is_active": "true"}, "is_active", "JSON boolean"),
        ({"is_active": 1}, "is_active", "JSON boolean"),
        ({"is_active": None}, "is_active", "JSON boolean"),
        ({"colour": "red"}, "colour", "unknown field(s) colour"),
        ({"id": 4}, "id", "read-only field(s) id"),
        ({"updated_at": "x", "zz": 1}, "updated_at, zz", "unknown field(s) zz"),
    ],
)
def test_bad_fields_are_refused_naming_the_field_and_saying_why(body, field, says):
    with pytest.raises(InvalidInput) as err:
        check_patch(body)
    assert err.value.field == field
    assert says in err.value.message
    with pytest.raises(InvalidInput):  # a POST is held to the same rules
        check_new({**ORDER_BOT, **body})


def test_every_refused_channel_names_the_channels_that_work():
    for channel in ("voice", "api", "sms"):
        with pytest.raises(InvalidInput) as err:
            check_patch({"channels": [channel]})
        assert all(wired in err.value.message for wired in WIRED_CHANNELS)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:5678/webhook/abc", "https://hooks.zapier.com/hooks/catch/1/x/"]
)
def test_http_and_https_urls_with_a_host_are_accepted(url):
    assert check_patch({"webhook_url": f" {url} "}).webhook_url == url


def test_a_patch_changes_only_what_it_names_and_an_empty_one_nothing():
    stored = workflow(channels=("telegram",))
    assert apply_patch(stored, check_patch({})) == stored
    edited = apply_patch(stored, check_patch({"is_active": False, "channels": ["whatsapp"]}))
    assert edited == Workflow(1, "w1", stored.webhook_url, ("whatsapp",), False)


def test_the_view_is_what_the_api_shows():
    stored = Workflow(3, "n", "https://e.com/h", ("discord",), True, NOW, NOW)
    assert converter.unstructure(stored) == {
        "id": 3,
        "name": "n",
        "webhook_url": "https://e.com/h",
        "channels": ["discord"],
        "is_active": True,
        "created_at": NOW.isoformat(),
        "updated_at": NOW.isoformat(),
    }


def test_filters_take_a_wired_channel_and_true_or_false():
    assert check_filters([]) == Filters()
    assert check_filters([("channel", "WhatsApp"), ("is_active", "False")]) == Filters(
        "whatsapp", False
    )
    for args, field in [
        ([("channel", "voice")], "channel"),
        ([("channel", "fax")], "channel"),
        ([("is_active", "yes")], "is_active"),
        ([("is_active", "")], "is_active"),
        ([("active", "true")], "active"),
        ([("channel", "telegram"), ("channel", "discord")], "channel"),
    ]:
        with pytest.raises(InvalidInput) as err:
            check_filters(args)
        assert err.value.field == field


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("1", 1),
        ("42", 42),
        ("0", None),
        ("-1", None),
        ("x", None),
        ("1.5", None),
        ("٣", None),
        ("9" * 19, None),
        (str(2**63 - 1), 2**63 - 1),
        ("9" * 5000, None),
        ("", None),
    ],
)
def test_a_path_id_is_a_positive_bigint_or_nothing_has_it(raw, expected):
    assert stored_id(raw) == expected


# ---------------------------------------------------------------- matching


def test_only_active_workflows_on_the_channel_fire_in_order():
    stored = [
        workflow(1, ("telegram", "whatsapp")),
        workflow(2, ("discord",)),
        workflow(3, ("telegram",), is_active=False),
        workflow(4, ("telegram",)),
    ]
    assert [w.id for w in firing(stored, "telegram")] == [1, 4]
    assert [w.id for w in firing(stored, "discord")] == [2]
    assert [w.id for w in firing(stored, "whatsapp")] == [1]


def test_a_channel_that_is_not_wired_fires_nothing_whatever_is_stored():
    stored = [workflow(1, ("voice", "telegram")), workflow(2, ("api",))]
    assert firing(stored, "voice") == []
    assert firing(stored, "api") == []
    assert firing(stored, "Telegram") == []  # adapters pass the identifier as it is


# ---------------------------------------------------------------- retries

POLICY = RetryPolicy()


@pytest.mark.parametrize(
    "outcome",
    [Outcome(timed_out=True), Outcome(), Outcome(500), Outcome(503), Outcome(429), Outcome(408)],
)
def test_timeouts_connection_failures_429_and_5xx_are_retried_twice_with_backoff(outcome):
    assert next_delay(POLICY, 1, outcome, NOW) == 1.0
    assert next_delay(POLICY, 2, outcome, NOW) == 2.0
    assert next_delay(POLICY, 3, outcome, NOW) is None  # three attempts in all


@pytest.mark.parametrize("status", [200, 202, 204, 301, 400, 401, 404, 410, 422])
def test_success_and_other_statuses_are_not_retried(status):
    assert next_delay(POLICY, 1, Outcome(status), NOW) is None


def test_retry_after_is_honoured_within_the_bound_and_beyond_it_the_call_is_given_up():
    assert next_delay(POLICY, 1, Outcome(429, retry_after="7"), NOW) == 7.0
    assert next_delay(POLICY, 1, Outcome(503, retry_after="0"), NOW) == 0.0
    assert next_delay(POLICY, 1, Outcome(429, retry_after="61"), NOW) is None
    later = format_datetime(NOW + timedelta(seconds=30), usegmt=True)
    assert next_delay(POLICY, 1, Outcome(503, retry_after=later), NOW) == 30.0
    # an unreadable header: the usual backoff
    assert next_delay(POLICY, 2, Outcome(429, retry_after="soon"), NOW) == 2.0
    # out of retries whatever the receiver asks
    assert next_delay(POLICY, 3, Outcome(429, retry_after="1"), NOW) is None


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds(" 12 ", NOW) == 12.0
    assert retry_after_seconds("Sun, 22 Nov 2026 08:00:05 GMT", NOW) == 5.0
    assert retry_after_seconds("Sun, 22 Nov 2026 07:00:00 GMT", NOW) == 0.0  # past: now
    assert retry_after_seconds("-3", NOW) is None
    assert retry_after_seconds("", NOW) is None


def test_the_policy_is_a_value_a_test_or_runner_can_shorten():
    quick = RetryPolicy(timeout_seconds=0.2, backoff_seconds=0.01, max_retries=1)
    assert next_delay(quick, 1, Outcome(500), NOW) == 0.01
    assert next_delay(quick, 2, Outcome(500), NOW) is None
    assert Outcome(timed_out=True).describe() == "no answer in time"
    assert Outcome().describe() == "could not connect"
    assert Outcome(502).describe() == "HTTP 502"


# ---------------------------------------------------------------- the owner's test call


@pytest.mark.parametrize(
    ("outcome", "shown"),
    [
        (Outcome(status=204), (True, 204, "the workflow answered HTTP 204")),
        (Outcome(status=500), (False, 500, "the workflow answered HTTP 500")),
        (
            Outcome(status=307),
            (False, 307, "the workflow answered HTTP 307 (a redirect, which is not followed)"),
        ),
        (
            Outcome(timed_out=True, failure="no answer within 10 s"),
            (False, None, "no answer within 10 s"),
        ),
        (
            Outcome(failure="ConnectError: [Errno 111] Connection refused"),
            (False, None, "could not connect (ConnectError: [Errno 111] Connection refused)"),
        ),
        (
            Outcome(refused="10.0.0.5 is a private address"),
            (False, None, "not called: 10.0.0.5 is a private address"),
        ),
    ],
)
def test_a_test_calls_outcome_is_told_in_words(outcome, shown):
    result = call_result(outcome, 12)
    assert (result.ok, result.status, result.message) == shown
    assert result.elapsed_ms == 12


def test_a_test_call_has_a_real_calls_shape_marked_as_a_test():
    body = json.loads(workflow_test_body(7, ("web", "telegram")))
    assert set(body) == set(json.loads(workflow_body("web", "", "", {})))
    assert body["channel"] == "web" and body["context"] == {"test": True, "workflow_id": 7}
    assert "test" in body["message"].lower() and "test" in body["ai_reply"].lower()
    # one stored without channels (past the API's checks): the first wired channel
    assert json.loads(workflow_test_body(7, ()))["channel"] == "telegram"
