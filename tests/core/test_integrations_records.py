"""The rules of syncing a data source's records: user keys, source keys, pages, the
bound, the outcome and the stale rule (ragcore.integrations.records)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragcore.integrations.records import (
    Outcome,
    Progress,
    cancelled_outcome,
    id_field,
    is_stale,
    outcome,
    page_wait,
    prepare_page,
    record_hash,
    source_key,
    stopped_sync,
    table_records,
    user_key,
    within_bound,
)


@pytest.mark.parametrize(
    ("record", "field", "expected"),
    [
        ({"email": "  Ada@Example.COM "}, "email", "ada@example.com"),
        ({"properties": {"email": "Bo@X.io"}}, "properties.email", "bo@x.io"),
        ({"properties.email": "c@x.io"}, "properties.email", "c@x.io"),  # a literal name
        ({"customer_id": " AB-12 "}, "customer_id", "AB-12"),  # not an e-mail: case kept
        ({"customer_id": 42}, "customer_id", "42"),
        ({"email": ""}, "email", None),
        ({"email": "   "}, "email", None),
        ({"email": None}, "email", None),
        ({"email": True}, "email", None),
        ({"email": {"a": 1}}, "email", None),
        ({"name": "x"}, "email", None),
        ({"properties": "flat"}, "properties.email", None),
    ],
)
def test_the_user_key_is_the_trimmed_value_at_the_dotted_path(record, field, expected):
    assert user_key(record, field) == expected


def test_each_kind_names_the_field_that_identifies_a_record():
    assert id_field("postgresql", {}) == "id"  # key_column's default
    assert id_field("mysql", {"key_column": "customer_no"}) == "customer_no"
    assert id_field("mongodb", {}) == "_id"
    assert id_field("hubspot", {}) == "id"
    assert id_field("shopify", {}) == "id"
    assert id_field("stripe", {}) == "id"
    assert id_field("salesforce", {}) == "Id"
    assert id_field("google_sheets", {}) is None
    assert id_field("csv", {}) is None


def test_a_record_without_its_id_is_known_by_the_hash_of_its_canonical_json():
    assert source_key({"id": 7, "email": "a@x.io"}, "id") == "7"
    assert source_key({"email": "a@x.io", "n": 1}, "id") == source_key(
        {"n": 1, "email": "a@x.io"}, None
    )
    assert source_key({"email": "a@x.io"}, None).startswith("sha256:")
    assert source_key({"email": "a@x.io"}, None) != source_key({"email": "b@x.io"}, None)
    assert source_key({"id": ""}, "id") == record_hash({"id": ""})
    assert source_key({"id": "x" * 600}, "id").startswith("sha256:")  # too long: hashed


def test_a_page_skips_records_without_a_user_and_keeps_a_repeated_records_last_form():
    page = prepare_page(
        [
            {"id": 1, "email": "A@x.io", "plan": "free"},
            {"id": 2, "name": "no e-mail"},
            {"id": 1, "email": "a@x.io", "plan": "pro"},
            {"id": 3, "email": "b@x.io", "when": datetime(2026, 1, 2, tzinfo=UTC)},
        ],
        "email",
        "id",
    )
    assert page.skipped == 1
    assert [(r.user_key, r.source_key, r.record.get("plan")) for r in page.rows] == [
        ("a@x.io", "1", "pro"),
        ("b@x.io", "3", None),
    ]
    assert page.rows[1].record["when"] == "2026-01-02 00:00:00+00:00"  # stored as JSON


def test_the_bound_leaves_room_for_what_is_left():
    assert within_bound(Progress(seen=0), 500, 1000) == 500
    assert within_bound(Progress(seen=900), 500, 1000) == 100
    assert within_bound(Progress(seen=1000), 500, 1000) == 0


def test_the_outcome_of_a_sync():
    done = outcome(complete=True, failure=None, max_records=10)
    assert (done.status, done.error, done.remove_unseen) == ("succeeded", "", True)
    cut = outcome(complete=False, failure=None, max_records=10)
    assert cut.status == "partial" and not cut.remove_unseen
    assert "INTEGRATIONS_SYNC_MAX_RECORDS (10)" in cut.error
    failed = outcome(complete=True, failure="401 Unauthorized", max_records=10)
    assert (failed.status, failed.error, failed.remove_unseen) == (
        "failed",
        "401 Unauthorized",
        False,
    )


def test_a_sync_without_progress_for_long_enough_is_stale():
    now = datetime(2026, 11, 24, 12, tzinfo=UTC)
    assert not is_stale(now - timedelta(minutes=9), now, 20)
    assert is_stale(now - timedelta(minutes=10), now, 20)
    assert not is_stale(now - timedelta(minutes=15), now, 300)  # 4 requests of 5 minutes
    assert is_stale(now - timedelta(minutes=20), now, 300)
    assert is_stale(None, now, 20)
    assert page_wait(20) == 300 and page_wait(300) == 600  # a live sync never looks stale


def test_a_tables_rows_become_records_named_by_its_header():
    rows = [
        ["email", " name ", "", "email"],
        ["a@x.io", "Ada", "1", "dup"],
        ["b@x.io"],
        ["c", "C", "3", "4", "extra"],
    ]
    assert table_records(rows) == [
        {"email": "a@x.io", "name": "Ada", "column_3": "1", "email_2": "dup"},
        {"email": "b@x.io", "name": "", "column_3": "", "email_2": ""},
        {"email": "c", "name": "C", "column_3": "3", "email_2": "4", "column_5": "extra"},
    ]
    assert table_records([]) == []


def test_records_are_stored_as_json_postgresql_takes():
    page = prepare_page(
        [{"email": "a@x.io", "note": "nul\x00here", "score": float("nan"), "tags": ("a", 1)}],
        "email",
        None,
    )
    assert page.rows[0].record == {
        "email": "a@x.io",
        "note": "nulhere",
        "score": "nan",
        "tags": ["a", 1],
    }


def test_a_patch_sets_removes_and_keeps_credentials_and_the_interval():
    from ragcore.integrations.kinds import KINDS, check_patch

    stored = {"host": "db", "user": "u", "password": "p", "database": "d", "table": "t"}
    patch = check_patch(KINDS["mysql"], {"password": "new", "port": None}, {**stored, "port": "1"})
    assert patch.credentials_from({**stored, "port": "1"}) == {**stored, "password": "new"}
    assert patch.interval_from(30) == 30  # not named: kept
    assert check_patch(KINDS["mysql"], {"sync_interval_minutes": 5}, stored).interval_from(30) == 5
    cleared = check_patch(KINDS["mysql"], {"sync_interval_minutes": None}, stored)
    assert cleared.interval_from(30) is None


def test_a_cancelled_sync_is_partial_keeps_what_it_stored_and_removes_nothing():
    progress = Progress(seen=520, stored=500, skipped=20)
    ended = cancelled_outcome(progress)
    assert (ended.status, ended.remove_unseen) == ("partial", False)
    assert ended.error.startswith("cancelled (DELETE /jobs/{id}) after 500 records")
    assert stopped_sync(progress) == {
        "status": "partial",
        "records_seen": 520,
        "records_stored": 500,
        "records_skipped": 20,
    }
    assert isinstance(ended, Outcome)
