"""Token budgets (rule 14): the rules, and the chat pipeline metered by them."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.chat.sources import Hit
from ragcore.effects import (
    DetectLanguage,
    Embed,
    Generate,
    ReleaseTokens,
    Reply,
    ReserveTokens,
    SearchChunks,
    SettleTokens,
)
from ragcore.usage import (
    LIMIT_REACHED,
    Allowed,
    Capped,
    Caps,
    Reservation,
    TokenUsage,
    Totals,
    check_budget,
    day_and_month,
    estimate_tokens,
    measured_usage,
)
from tests.core.drive import drive


def test_unset_caps_are_unlimited():
    assert check_budget(Totals(10**9, 10**9, 10**9, 10**9), Caps(), "support") == Allowed()


def test_a_cap_stops_requests_once_reached():
    caps = Caps(daily=1000)
    assert check_budget(Totals(day=999), caps, None) == Allowed()
    assert check_budget(Totals(day=1000), caps, None) == Capped("daily", 1000, 1000)


def test_role_caps_use_the_override_and_apply_only_to_that_role():
    caps = Caps(role_daily=100, role_daily_overrides=(("sales", 500),), role_monthly=900)
    assert check_budget(Totals(role_day=300), caps, "sales") == Allowed()
    assert check_budget(Totals(role_day=300), caps, "support") == Capped("role daily", 100, 300)
    assert check_budget(Totals(role_month=900), caps, "sales") == Capped("role monthly", 900, 900)
    assert check_budget(Totals(role_day=300), caps, None) == Allowed()


def test_an_override_of_zero_makes_a_role_unlimited():
    caps = Caps(role_daily=100, role_daily_overrides=(("ceo", 0),))
    assert check_budget(Totals(role_day=10**6), caps, "ceo") == Allowed()


def test_days_and_months_are_utc():
    late_in_new_york = datetime(2026, 11, 30, 20, 30, tzinfo=timezone(timedelta(hours=-5)))
    day, month = day_and_month(late_in_new_york)
    assert day == datetime(2026, 12, 1, tzinfo=UTC)
    assert month == datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(ValueError):
        day_and_month(datetime(2026, 1, 1))


def test_providers_without_counts_are_estimated_at_four_characters_a_token():
    assert estimate_tokens("x" * 401) == 101
    assert measured_usage(None, "p" * 400, "a" * 40) == TokenUsage(100, 10, estimated=True)
    reported = TokenUsage(7, 3)
    assert measured_usage(reported, "p" * 400, "a" * 40) is reported


POLICY = ChatPolicy(
    max_context_chars=12000,
    max_output_tokens=100,
    temperature=0.3,
    usage_ledger=True,
    caps=Caps(daily=1000),
)
HIT = Hit(1, 1, "faq.md", "We open at 9.", 0.9)


def responder(decision, reply=Reply("At 9 [1].", "openai", "gpt", TokenUsage(40, 5)), hits=(HIT,)):
    def answer(effect):
        match effect:
            case ReserveTokens():
                return decision
            case DetectLanguage():
                return []
            case Embed():
                return [[1.0]]
            case SearchChunks():
                return list(hits)
            case Generate():
                if isinstance(reply, Exception):
                    raise reply
                return reply
            case SettleTokens() | ReleaseTokens():
                return None
        raise AssertionError(effect)

    return answer


def test_a_capped_request_calls_no_provider_and_says_the_limit_is_reached():
    outcome, effects = drive(
        answer_question(ChatRequest("When do you open?", "sales"), POLICY),
        responder(Capped("daily", 1000, 1000)),
    )
    [reserve] = effects
    assert reserve.role == "sales" and reserve.caps == Caps(daily=1000)
    assert outcome.answer == LIMIT_REACHED and outcome.limited
    assert outcome.provider is None


def test_an_allowed_request_settles_what_the_provider_reported():
    outcome, effects = drive(
        answer_question(ChatRequest("When do you open?"), POLICY), responder(Reservation(42))
    )
    assert [type(e) for e in effects] == [
        ReserveTokens,
        DetectLanguage,
        Embed,
        SearchChunks,
        Generate,
        SettleTokens,
    ]
    assert effects[0].tokens > POLICY.max_output_tokens
    assert effects[-1] == SettleTokens(42, "openai", "gpt", TokenUsage(40, 5))
    assert outcome.usage == TokenUsage(40, 5) and not outcome.limited


def test_a_failed_call_releases_its_reservation_and_fails():
    pipeline = answer_question(ChatRequest("When do you open?"), POLICY)
    answer = responder(Reservation(7))
    effect = next(pipeline)
    effect = pipeline.send(answer(effect))  # DetectLanguage
    effect = pipeline.send(answer(effect))  # Embed
    effect = pipeline.send(answer(effect))  # SearchChunks
    effect = pipeline.send(answer(effect))  # Generate
    assert isinstance(effect, Generate)
    release = pipeline.throw(RuntimeError("provider down"))
    assert release == ReleaseTokens(7)
    with pytest.raises(RuntimeError, match="provider down"):
        pipeline.send(None)


def test_with_nothing_retrieved_the_reservation_is_released():
    _, effects = drive(
        answer_question(ChatRequest("When do you open?"), POLICY),
        responder(Reservation(9), hits=()),
    )
    assert effects[-1] == ReleaseTokens(9)


def test_with_the_ledger_off_nothing_is_reserved_or_recorded():
    policy = ChatPolicy(max_context_chars=12000, max_output_tokens=100, temperature=0.3)
    _, effects = drive(answer_question(ChatRequest("When?"), policy), responder(None))
    # "When?" is too short to detect a language in: no detection either
    assert [type(e) for e in effects] == [Embed, SearchChunks, Generate]
