"""The rules of API keys: which scopes open a route, what a refusal says, a chat key's
own conversations, the minute window, and the bodies of /keys."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from ragcore.api.keys import (
    check_new,
    check_patch,
    expiry,
    key_hash,
    looks_like_key,
    only_own_conversations,
    refusal,
    retry_after,
    scopes_of,
    window_start,
)
from ragcore.errors import InvalidInput
from ragcore.usage import Allowed, Capped, Caps, Totals, check_budget


def test_admin_opens_every_route_and_a_route_without_an_entry_is_admins_alone() -> None:
    assert scopes_of("post", "/chat") == ("admin", "chat")
    assert scopes_of("GET", "/documents") == ("admin", "read", "ingest")
    assert scopes_of("POST", "/keys") == ("admin",)
    assert scopes_of("GET", "/no/such/route") == ("admin",)
    assert refusal("POST", "/keys", ["admin"]) is None
    assert refusal("GET", "/documents", ["ingest"]) is None


def test_a_refusal_names_the_scopes_held_and_the_one_needed() -> None:
    assert refusal("GET", "/usage", ["chat", "ingest"]) == (
        "this API key's scopes (chat, ingest) do not open GET /usage: it needs the read scope"
    )
    assert refusal("GET", "/documents", ["chat"]).endswith("it needs the read or ingest scope")
    assert refusal("DELETE", "/keys/{id}", ["read"]).endswith("it needs the admin scope")


def test_only_a_chat_key_that_cannot_read_sees_only_its_own_conversations() -> None:
    assert only_own_conversations(("chat",))
    assert only_own_conversations(("chat", "ingest"))
    assert not only_own_conversations(("read", "chat"))
    assert not only_own_conversations(("admin",))
    assert not only_own_conversations(("ingest",))


def test_a_key_has_one_form_and_is_kept_as_its_sha256() -> None:
    key = "rck_" + "a" * 43
    assert looks_like_key(key)
    assert not looks_like_key(key + "a") and not looks_like_key("sk-" + "a" * 44)
    assert not looks_like_key("rck_" + "a" * 42 + "=")
    assert key_hash(key) == hashlib.sha256(key.encode()).hexdigest()
    assert key not in key_hash(key) and len(key_hash(key)) == 64


@pytest.mark.parametrize(
    ("now", "window", "seconds"),
    [
        (datetime(2026, 1, 1, 12, 30, 0, tzinfo=UTC), "12:30:00", 60),
        (datetime(2026, 1, 1, 12, 30, 59, 500_000, tzinfo=UTC), "12:30:00", 1),
        (datetime(2026, 1, 1, 12, 30, 59, 999_999, tzinfo=UTC), "12:30:00", 1),
        (datetime(2026, 1, 1, 12, 30, 20, 250_000, tzinfo=UTC), "12:30:00", 40),
    ],
)
def test_requests_are_counted_per_calendar_minute(now: datetime, window: str, seconds: int) -> None:
    assert window_start(now).strftime("%H:%M:%S") == window
    assert retry_after(now) == seconds


def test_the_bodies_of_keys_are_checked_field_by_field() -> None:
    made = check_new({"name": " site ", "scopes": ["chat", "read"], "requests_per_minute": 60})
    assert (made.name, made.scopes, made.requests_per_minute) == ("site", ("read", "chat"), 60)
    assert made.tokens_per_day is None and made.expires_in_days is None
    for body, field in (
        ({"scopes": ["chat"]}, "name"),
        ({"name": "site"}, "scopes"),
        ({"name": "site", "scopes": "chat"}, "scopes"),
        ({"name": "site", "scopes": ["chat", "chat"]}, "scopes"),
        ({"name": "", "scopes": ["chat"]}, "name"),
        ({"name": "site", "scopes": ["chat"], "tokens_per_day": 1.5}, "tokens_per_day"),
        ({"name": "site", "scopes": ["chat"], "expires_in_days": 3651}, "expires_in_days"),
        ({"name": "site", "scopes": ["chat"], "revoked_at": None}, "revoked_at"),
    ):
        with pytest.raises(InvalidInput) as refused:
            check_new(body)
        assert refused.value.field == field, body
    for moment in ("next year", 5, "2027-13-01"):
        with pytest.raises(InvalidInput, match="RFC 3339") as refused:
            check_new({"name": "site", "scopes": ["chat"], "expires_at": moment})
        assert refused.value.field == "expires_at"
    now = datetime(2026, 6, 1, tzinfo=UTC)
    later = check_new({"name": "site", "scopes": ["chat"], "expires_at": "2026-07-01"})
    assert expiry(now, later) == datetime(2026, 7, 1, tzinfo=UTC)
    in_days = check_new({"name": "site", "scopes": ["chat"], "expires_in_days": 30})
    assert expiry(now, in_days) == datetime(2026, 7, 1, tzinfo=UTC)
    assert expiry(now, check_new({"name": "site", "scopes": ["chat"]})) is None
    for body in (
        {"expires_at": "2026-05-31T23:59:59Z"},
        {"expires_at": "2036-06-01"},
        {"expires_at": "2026-07-01", "expires_in_days": 30},
    ):
        with pytest.raises(InvalidInput) as refused:
            expiry(now, check_new({"name": "site", "scopes": ["chat"], **body}))
        assert refused.value.field == "expires_at", body
    assert check_patch({}).name is None
    with pytest.raises(InvalidInput):
        check_patch({"scopes": None})


def test_a_keys_daily_tokens_are_a_cap_of_its_own() -> None:
    caps = Caps(key_id=7, key_daily=1000)
    assert caps.any
    assert isinstance(check_budget(Totals(key_day=999), caps, None), Allowed)
    capped = check_budget(Totals(key_day=1000, day=5), caps, None)
    assert isinstance(capped, Capped)
    assert (capped.scope, capped.cap, capped.used) == ("key daily", 1000, 1000)
    # the others' tokens are not the key's
    assert isinstance(check_budget(Totals(day=10**9), caps, None), Allowed)
    assert not Caps(key_id=7).any
