"""The rules of /live-actions bodies: each field checked, the template against its
source's kind, and an action that could never run refused with the reason; the dry
run's values, given or found in a message; rows shown as JSON."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from ragcore.api.live_actions import (
    LiveActionFields,
    apply_patch,
    check_dry_run,
    check_new,
    check_patch,
    check_runnable,
    dry_run,
    dry_run_values,
    json_value,
    switches_off,
    template_facts,
)
from ragcore.errors import InvalidInput
from ragcore.live.answers import RecordLive
from ragcore.live.matching import LiveAction
from ragcore.live.pipeline import LiveRows, RunLiveQuery
from ragcore.live.templates import SqlTemplate
from tests.core.drive import drive

READ = "SELECT status FROM orders WHERE id = {order_id}"
CANCEL = "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}"
BODY = {"name": "Order status", "source_id": 3, "template": READ}


def refused(body: dict, field: str) -> str:
    with pytest.raises(InvalidInput) as error:
        check_new(body)
    assert error.value.field == field, error.value
    return error.value.message


def not_runnable(fields: LiveActionFields, kind: str = "postgresql") -> InvalidInput:
    with pytest.raises(InvalidInput) as error:
        check_runnable(fields, kind)
    return error.value


def test_a_new_action_takes_its_defaults_and_checks_against_its_kind() -> None:
    fields = check_new({**BODY, "channels": ["Chat", "voice", "chat"], "triggers": [" where is "]})
    assert fields == LiveActionFields(
        "Order status", 3, READ, ("where is",), True, ("chat", "voice"), "", True
    )
    template = check_runnable(fields, "postgresql")
    assert isinstance(template, SqlTemplate) and template.params == ("order_id",)
    assert check_new(BODY).channels == () and check_new(BODY).auto_match is True


def test_fields_are_required_typed_and_known() -> None:
    assert "required" in refused({"name": "x", "source_id": 1}, "template")
    assert "required" in refused({"template": READ, "source_id": 1}, "name")
    refused({**BODY, "template": 5}, "template")
    refused({**BODY, "template": None}, "template")
    refused({**BODY, "source_id": "3"}, "source_id")
    refused({**BODY, "source_id": 0}, "source_id")
    refused({**BODY, "name": "  "}, "name")
    refused({**BODY, "channels": ["sms"]}, "channels")
    refused({**BODY, "triggers": "cancel"}, "triggers")
    refused({**BODY, "triggers": ["?!"]}, "triggers")
    refused({**BODY, "triggers": ["x"] * 51}, "triggers")
    refused({**BODY, "auto_match": "yes"}, "auto_match")
    refused({**BODY, "description": "d" * 1001}, "description")
    assert "read-only" in refused({**BODY, "params": []}, "params")
    assert "unknown" in refused({**BODY, "query": READ}, "query")


def test_the_template_is_refused_with_its_reason() -> None:
    two = not_runnable(check_new({**BODY, "template": READ + "; DELETE FROM orders"}))
    assert two.field == "template" and "one statement" in two.message
    unknown = not_runnable(check_new({**BODY, "template": "SELECT * FROM t WHERE a = {name}"}))
    assert unknown.field == "template" and "unknown placeholder {name}" in unknown.message
    quoted = not_runnable(check_new({**BODY, "template": "SELECT * FROM t WHERE a = '{email}'"}))
    assert quoted.field == "template" and "without quotes" in quoted.message
    # a filter is an object for mongodb, and text is not a filter for postgresql
    assert check_runnable(check_new({**BODY, "template": {"email": "{email}"}}), "mongodb")
    assert not_runnable(check_new({**BODY, "template": {"a": 1}})).field == "template"


def test_an_action_that_could_never_run_is_refused() -> None:
    silent = not_runnable(check_new({**BODY, "auto_match": False}))
    assert silent.field == "triggers" and "never run" in silent.message
    write = not_runnable(check_new({**BODY, "template": CANCEL}))
    assert write.field == "triggers" and "never auto-matched" in write.message
    with_trigger = check_new({**BODY, "template": CANCEL, "triggers": ["cancel my order"]})
    assert check_runnable(with_trigger, "mysql").writes
    triggered_only = check_new({**BODY, "auto_match": False, "triggers": ["order status"]})
    assert check_runnable(triggered_only, "postgresql")


def test_a_patch_changes_what_it_names_and_is_checked_as_a_whole() -> None:
    existing = check_new({**BODY, "triggers": ["cancel my order"]})
    assert apply_patch(existing, check_patch({})) == existing
    patched = apply_patch(existing, check_patch({"template": CANCEL, "enabled": False}))
    assert patched.template == CANCEL and not patched.enabled and patched.name == BODY["name"]
    assert check_runnable(patched, "postgresql").writes
    no_trigger = apply_patch(patched, check_patch({"triggers": []}))
    assert not_runnable(no_trigger).field == "triggers"
    # another source, of another kind: the SQL is no filter
    assert not_runnable(apply_patch(existing, check_patch({"source_id": 9})), "mongodb").field == (
        "template"
    )
    with pytest.raises(InvalidInput):
        check_patch({"name": None})


def test_template_facts_show_params_writes_or_why_it_no_longer_passes() -> None:
    facts = template_facts("mysql", "SELECT * FROM o WHERE id = {order_id} AND e = {email}")
    assert facts.params == ("order_id", "email") and not facts.writes and not facts.error
    assert template_facts("mysql", CANCEL).writes
    broken = template_facts("mysql", "SELECT 1; SELECT 2")
    assert broken.params == () and broken.error.startswith("template: ")


def test_dry_run_values_given_win_over_the_message() -> None:
    asked = check_dry_run(
        {"message": "where is order 4411? I'm ada@example.com", "values": {"email": "b@x.io"}}
    )
    assert dry_run_values(("order_id", "email"), asked) == {"order_id": "4411", "email": "b@x.io"}
    # a bare number, as in a reply to the question for it
    assert dry_run_values(("order_id",), check_dry_run({"message": "4411"})) == {"order_id": "4411"}
    caller = check_dry_run({"user_identifier": "whatsapp:+1 415 555 0100", "channel": "whatsapp"})
    assert dry_run_values(("caller",), caller) == {"caller": "+14155550100"}
    assert dry_run_values((), check_dry_run({})) == {}


def test_a_missing_value_is_named() -> None:
    with pytest.raises(InvalidInput) as error:
        dry_run_values(("order_id", "phone"), check_dry_run({"values": {"order_id": "1"}}))
    assert error.value.field == "values" and "missing phone" in error.value.message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"values": {"name": "x"}}, "values"),
        ({"values": {"email": 5}}, "values"),
        ({"values": {"email": " "}}, "values"),
        ({"values": ["4411"]}, "values"),
        ({"channel": "sms"}, "channel"),
        ({"message": 4411}, "message"),
        ({"message": "m" * 10_001}, "message"),
        ({"user_identifier": "u" * 201}, "user_identifier"),
        ({"dry": True}, "dry"),
    ],
)
def test_a_bad_dry_run_body_is_refused_by_field(body: dict, field: str) -> None:
    with pytest.raises(InvalidInput) as error:
        check_dry_run(body)
    assert error.value.field == field


def test_rows_are_shown_as_json() -> None:
    row = {
        "n": 1,
        "ok": True,
        "price": Decimal("44.90"),
        "day": date(2026, 11, 24),
        "at": datetime(2026, 11, 24, 12, tzinfo=UTC),
        "raw": b"\x01\xff",
        "tags": ("a", None),
        "doc": {"k": Decimal(1)},
    }
    assert json_value(row) == {
        "n": 1,
        "ok": True,
        "price": "44.90",
        "day": "2026-11-24",
        "at": "2026-11-24T12:00:00+00:00",
        "raw": "01ff",
        "tags": ["a", None],
        "doc": {"k": "1"},
    }


def test_turning_an_action_off_alone_is_not_checked_again() -> None:
    assert switches_off(check_patch({"enabled": False}))
    assert switches_off(check_patch({"enabled": False, "description": "broken, to fix"}))
    assert not switches_off(check_patch({"enabled": True}))
    assert not switches_off(check_patch({"enabled": False, "template": "SELECT 1"}))
    assert not switches_off(check_patch({"description": "x"}))


ORDER_STATUS = LiveAction(
    5, "Order status", 3, "postgresql", check_runnable(check_new(BODY), "postgresql")
)


def dry(action, body, answer):
    seen = []

    def record(effect):
        seen.append(effect)
        return answer(effect)

    shown, _ = drive(dry_run(action, check_dry_run(body)), record)
    return shown, seen


def test_a_dry_run_binds_the_values_shows_the_rows_and_logs_the_run() -> None:
    def answer(effect):
        if isinstance(effect, RunLiveQuery):
            rows = tuple({"status": "shipped", "n": i} for i in range(60))
            return LiveRows(rows, None, duration_ms=12)
        return None

    shown, (query, logged) = dry(ORDER_STATUS, {"values": {"order_id": "4411"}}, answer)
    assert query.dry_run and query.values == (("order_id", "4411"),)
    assert len(shown.rows) == 50 and shown.rows[0] == {"status": "shipped", "n": 0}
    assert (shown.duration_ms, shown.failed, shown.values) == (12, False, {"order_id": "4411"})
    assert isinstance(logged, RecordLive) and logged.channel == "chat"
    assert (logged.run.outcome, logged.run.row_count, logged.run.duration_ms) == ("dry_run", 60, 12)


def test_a_dry_run_whose_query_fails_unexpectedly_shows_its_kind_only_and_is_logged() -> None:
    def answer(effect):
        if isinstance(effect, RunLiveQuery):
            raise KeyError("4411 is the customer's value")
        return None

    shown, (_, logged) = dry(ORDER_STATUS, {"message": "where is 4411?"}, answer)
    assert shown.failed and shown.reason == "the query failed unexpectedly (KeyError)"
    assert "4411" not in logged.run.reason and logged.run.outcome == "dry_run"


def test_a_dry_run_missing_a_value_runs_nothing() -> None:
    with pytest.raises(InvalidInput) as missing:
        dry(ORDER_STATUS, {}, lambda effect: None)
    assert missing.value.field == "values"
