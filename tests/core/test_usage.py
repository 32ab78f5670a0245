"""Token budgets (rule 14): the rules, and the chat pipeline metered by them."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.language import DetectLanguage
from ragcore.sources import Hit
from ragcore.usage import (
    LIMIT_REACHED,
    MIN_ANSWER_TOKENS,
    Allowed,
    Capped,
    Caps,
    CheckBudget,
    ReleaseTokens,
    Reservation,
    ReserveTokens,
    SettleTokens,
    TokenUsage,
    Totals,
    check_budget,
    day_and_month,
    estimate_tokens,
    fit_hold,
    measured_usage,
    prompt_hold,
    tightest,
)
from tests.core.drive import drive


def test_unset_caps_are_unlimited():
    assert check_budget(Totals(10**9, 10**9, 10**9, 10**9), Caps(), "support") == Allowed()


def test_a_cap_stops_requests_once_reached():
    caps = Caps(daily=1000)
    assert check_budget(Totals(day=999), caps, None) == Allowed()
    assert check_budget(Totals(day=1000), caps, None) == Capped("daily", 1000, 1000)


def test_a_call_is_allowed_only_when_all_of_it_fits():
    caps = Caps(daily=1000)
    assert check_budget(Totals(day=900), caps, None, tokens=100) == Allowed()
    assert check_budget(Totals(day=901), caps, None, tokens=100) == Capped("daily", 1000, 901)


def test_role_caps_use_the_override_and_apply_only_to_that_role():
    caps = Caps(role_daily=100, role_daily_overrides=(("sales", 500),), role_monthly=900)
    assert check_budget(Totals(role_day=300), caps, "sales") == Allowed()
    assert check_budget(Totals(role_day=300), caps, "support") == Capped("role daily", 100, 300)
    assert check_budget(Totals(role_month=900), caps, "sales") == Capped("role monthly", 900, 900)
    assert check_budget(Totals(role_day=300), caps, None) == Allowed()


def test_an_override_of_zero_makes_a_role_unlimited():
    caps = Caps(role_daily=100, role_daily_overrides=(("ceo", 0),))
    assert check_budget(Totals(role_day=10**6), caps, "ceo") == Allowed()


def test_the_tightest_cap_decides():
    caps = Caps(daily=1000, monthly=5000, role_daily=300)
    room = tightest(Totals(day=500, month=4900, role_day=100), caps, "sales")
    assert (room.scope, room.left) == ("monthly", 100)
    assert tightest(Totals(), Caps(), "sales") is None


# fit_hold(counted, settled, caps, role, prompt, max_output, min_output)
def test_a_hold_gets_all_its_output_when_it_fits():
    assert fit_hold(Totals(day=100), Totals(day=100), Caps(daily=2000), None, 300, 1024, 32) == 1024
    assert fit_hold(Totals(day=10**9), Totals(), Caps(), None, 300, 1024, 32) == 1024


def test_a_small_cap_serves_what_fits_with_less_output():
    """300 tokens left: a 240-token prompt is sent with 60 tokens of output, not refused
    (the old rule held about 4,500 tokens for every request, whatever the cap)."""
    caps = Caps(daily=300)
    assert fit_hold(Totals(), Totals(), caps, None, 240, 1024, 32) == 60


def test_below_the_least_output_the_call_is_capped_never_squeezed_past_the_cap():
    caps = Caps(daily=300)
    capped = fit_hold(Totals(day=100), Totals(day=100), caps, None, 240, 1024, 32)
    assert capped == Capped("daily", 300, 100, wait=False)


def test_a_call_crowded_out_by_calls_in_flight_waits_for_them():
    """What others hold but have not used may come back: the call waits rather than being
    refused; once only what was used counts and it still does not fit, it is refused."""
    caps = Caps(daily=1000)
    crowded = fit_hold(Totals(day=900), Totals(day=200), caps, None, 240, 1024, 32)
    assert crowded == Capped("daily", 1000, 900, wait=True)
    spent = fit_hold(Totals(day=900), Totals(day=800), caps, None, 240, 1024, 32)
    assert spent == Capped("daily", 1000, 900, wait=False)


def test_a_role_cap_and_a_global_cap_both_bound_the_output():
    caps = Caps(daily=10_000, role_daily=400)
    assert fit_hold(Totals(day=0, role_day=100), Totals(), caps, "sales", 200, 1024, 32) == 100


def test_the_prompt_hold_is_calibrated_by_the_providers_counts():
    assert prompt_hold(500, None) == 500  # no history: the estimate, 4 characters a token
    assert prompt_hold(500, 0.5) == 275  # the provider counted half: held at that, plus 10 %
    assert prompt_hold(500, 1.3) == 715  # it counted more: held higher
    assert prompt_hold(500, 0.001) == 55  # never below a tenth of the estimate


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


def responder(
    decision,
    reply=ModelReply("At 9 [1].", "openai", "gpt", TokenUsage(40, 5)),
    hits=(HIT,),
    room=None,
):
    def answer(effect):
        match effect:
            case CheckBudget():
                return room or Allowed()
            case ReserveTokens():
                return decision
            case DetectLanguage():
                return []
            case FindOwnerAnswer():
                return None
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


def test_a_request_with_no_room_left_calls_no_provider_at_all():
    outcome, effects = drive(
        answer_question(ChatRequest("When do you open?", "sales"), POLICY),
        responder(None, room=Capped("daily", 1000, 1000)),
    )
    [check] = effects
    assert check == CheckBudget("sales", check.tokens, Caps(daily=1000))
    assert check.tokens > MIN_ANSWER_TOKENS  # the grounding instructions, the question, a reply
    assert outcome.answer == LIMIT_REACHED and outcome.limited
    assert outcome.provider is None


def test_a_call_that_does_not_fit_is_not_made():
    outcome, effects = drive(
        answer_question(ChatRequest("When do you open?"), POLICY),
        responder(Capped("daily", 1000, 990)),
    )
    assert [type(e) for e in effects] == [
        CheckBudget,
        Embed,
        FindOwnerAnswer,
        SearchChunks,
        ReserveTokens,
    ]
    assert outcome.answer == LIMIT_REACHED and outcome.limited


def test_an_allowed_request_reserves_its_prompt_and_settles_what_the_provider_reported():
    outcome, effects = drive(
        answer_question(ChatRequest("When do you open?"), POLICY), responder(Reservation(42, 100))
    )
    assert [type(e) for e in effects] == [
        CheckBudget,
        Embed,
        FindOwnerAnswer,
        SearchChunks,
        ReserveTokens,
        Generate,
        SettleTokens,
    ]
    reserve, generate = effects[4], effects[5]
    prompt = generate.prompt
    assert reserve.prompt_tokens == estimate_tokens(prompt.system + prompt.user)
    assert (reserve.max_output_tokens, reserve.min_output_tokens) == (100, MIN_ANSWER_TOKENS)
    assert generate.max_output_tokens == 100
    assert effects[-1] == SettleTokens(42, "openai", "gpt", TokenUsage(40, 5))
    assert outcome.usage == TokenUsage(40, 5) and not outcome.limited


def test_an_answer_near_a_cap_is_asked_for_no_more_output_than_is_left():
    _, effects = drive(
        answer_question(ChatRequest("When do you open?"), POLICY), responder(Reservation(5, 48))
    )
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert generate.max_output_tokens == 48


def test_a_failed_call_releases_its_reservation_and_fails():
    pipeline = answer_question(ChatRequest("When do you open?"), POLICY)
    answer = responder(Reservation(7, 100))
    effect = next(pipeline)  # CheckBudget
    effect = pipeline.send(answer(effect))  # Embed
    effect = pipeline.send(answer(effect))  # FindOwnerAnswer
    effect = pipeline.send(answer(effect))  # SearchChunks
    effect = pipeline.send(answer(effect))  # ReserveTokens
    effect = pipeline.send(answer(effect))  # Generate
    assert isinstance(effect, Generate)
    release = pipeline.throw(RuntimeError("provider down"))
    assert release == ReleaseTokens(7)
    with pytest.raises(RuntimeError, match="provider down"):
        pipeline.send(None)


def test_with_nothing_retrieved_nothing_is_reserved():
    _, effects = drive(
        answer_question(ChatRequest("When do you open?"), POLICY),
        responder(Reservation(9, 100), hits=()),
    )
    assert [type(e) for e in effects] == [
        CheckBudget,
        Embed,
        FindOwnerAnswer,
        SearchChunks,
    ]


def test_with_the_ledger_off_nothing_is_reserved_or_recorded():
    policy = ChatPolicy(max_context_chars=12000, max_output_tokens=100, temperature=0.3)
    _, effects = drive(answer_question(ChatRequest("When?"), policy), responder(None))
    # "When?" is too short to detect a language in: no detection either
    assert [type(e) for e in effects] == [Embed, FindOwnerAnswer, SearchChunks, Generate]


def test_with_the_ledger_on_and_no_cap_the_call_is_recorded_without_a_check():
    policy = ChatPolicy(
        max_context_chars=12000, max_output_tokens=100, temperature=0.3, usage_ledger=True
    )
    _, effects = drive(
        answer_question(ChatRequest("When?"), policy), responder(Reservation(1, 100))
    )
    assert [type(e) for e in effects] == [
        Embed,
        FindOwnerAnswer,
        SearchChunks,
        ReserveTokens,
        Generate,
        SettleTokens,
    ]
