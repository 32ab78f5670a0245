"""Rule 6, provider fallback: the order providers are tried in, and which failures move on."""

import pytest

from ragcore.chat.fallback import (
    Attempt,
    FailureKind,
    GiveUp,
    TryProvider,
    answering_order,
    classify_status,
    failure_summary,
    moves_on,
    next_attempt,
    provider_order,
)
from tests.conftest import make_settings


def test_the_primary_comes_first_then_the_fallbacks_in_the_order_listed():
    assert provider_order("genai", ("anthropic", "openai")) == ("genai", "anthropic", "openai")


def test_a_provider_listed_twice_is_tried_once_where_it_first_appears():
    assert provider_order("genai", ("openai", "genai", "openai")) == ("genai", "openai")


def test_a_blank_fallback_list_means_the_primary_alone():
    assert provider_order("openai", ()) == ("openai",)


def test_the_order_follows_the_settings():
    settings = make_settings(
        llm_provider="genai", llm_fallback_providers="anthropic, openai", genai_api_key="k"
    )
    assert answering_order(settings) == ("genai", "anthropic", "openai")


def test_with_no_provider_named_the_primary_follows_the_keys_then_the_fallbacks():
    settings = make_settings(anthropic_api_key="k", llm_fallback_providers="extractive")
    assert answering_order(settings) == ("anthropic", "extractive")
    assert answering_order(make_settings()) == ("extractive",)


def test_a_primary_chosen_by_its_key_and_also_listed_as_fallback_is_tried_once():
    settings = make_settings(openai_api_key="k", llm_fallback_providers="openai,extractive")
    assert answering_order(settings) == ("openai", "extractive")


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, FailureKind.RATE_LIMITED),
        (500, FailureKind.UNAVAILABLE),
        (502, FailureKind.UNAVAILABLE),
        (503, FailureKind.UNAVAILABLE),
        (529, FailureKind.UNAVAILABLE),  # Anthropic's "overloaded"
        (408, FailureKind.TIMEOUT),
        (504, FailureKind.TIMEOUT),
        (401, FailureKind.BAD_KEY),
        (402, FailureKind.BAD_KEY),
        (403, FailureKind.BAD_KEY),
        (400, FailureKind.REJECTED),
        (404, FailureKind.REJECTED),
        (413, FailureKind.REJECTED),
        (422, FailureKind.REJECTED),
    ],
)
def test_http_statuses_map_to_failure_kinds(status, kind):
    assert classify_status(status) is kind


@pytest.mark.parametrize(
    "kind",
    [
        FailureKind.RATE_LIMITED,
        FailureKind.UNAVAILABLE,
        FailureKind.TIMEOUT,
        FailureKind.BAD_KEY,
    ],
)
def test_rate_limits_outages_timeouts_and_bad_keys_move_on_to_the_next_provider(kind):
    assert moves_on(kind)


def test_a_request_the_provider_rejected_does_not_move_on():
    # It would be just as malformed for the next provider: stop and say so.
    assert not moves_on(FailureKind.REJECTED)


def test_the_summary_names_every_provider_tried_and_how_it_failed():
    summary = failure_summary(
        [
            Attempt("genai", FailureKind.RATE_LIMITED, 429),
            Attempt("anthropic", FailureKind.TIMEOUT),
            Attempt("openai", FailureKind.BAD_KEY, 401),
        ]
    )
    assert summary == (
        "no answering provider could answer: genai rate limited (HTTP 429); "
        "anthropic timed out; openai refused the API key (HTTP 401)"
    )


def test_the_summary_of_a_lone_primary_points_at_the_fallback_setting():
    summary = failure_summary([Attempt("genai", FailureKind.UNAVAILABLE, 503)])
    assert "genai unavailable (HTTP 503)" in summary
    assert "LLM_FALLBACK_PROVIDERS" in summary


def test_the_summary_of_a_rejected_request_says_the_provider_rejected_it():
    summary = failure_summary(
        [
            Attempt("genai", FailureKind.UNAVAILABLE, 500),
            Attempt("openai", FailureKind.REJECTED, 400),
        ]
    )
    assert summary == (
        "the answering provider could not be used: genai unavailable (HTTP 500); "
        "openai rejected the request (HTTP 400)"
    )


def test_an_attempt_reads_as_plain_data_for_an_error_body():
    attempt = Attempt("anthropic", FailureKind.RATE_LIMITED, 429)
    assert attempt.as_dict() == {"provider": "anthropic", "failure": "rate_limited", "status": 429}


def test_a_reply_that_breaks_the_apis_promise_moves_on_to_the_next_provider():
    # A proxy's HTML page or a half-compatible server: another provider may answer properly.
    assert moves_on(FailureKind.BAD_REPLY)


def test_a_bad_reply_says_what_was_wrong_with_it():
    summary = failure_summary(
        [
            Attempt("openai", FailureKind.BAD_REPLY, 200, "a body that is not JSON"),
            Attempt("genai", FailureKind.BAD_REPLY, 200, "no text (finish reason MAX_TOKENS)"),
        ]
    )
    assert summary == (
        "no answering provider could answer: openai answered HTTP 200 with a body that is "
        "not JSON; genai answered HTTP 200 with no text (finish reason MAX_TOKENS)"
    )


def test_only_a_bad_reply_carries_a_reason_in_its_error_body():
    attempt = Attempt("openai", FailureKind.BAD_REPLY, 200, "JSON without choices")
    assert attempt.as_dict() == {
        "provider": "openai",
        "failure": "bad_reply",
        "status": 200,
        "reason": "JSON without choices",
    }


def test_the_chain_is_walked_in_order_while_failures_move_on():
    limited = Attempt("genai", FailureKind.RATE_LIMITED, 429)
    down = Attempt("openai", FailureKind.UNAVAILABLE, 503)
    assert next_attempt(3, []) == TryProvider(0)
    assert next_attempt(3, [limited]) == TryProvider(1)
    assert next_attempt(3, [limited, down]) == TryProvider(2)


def test_when_every_provider_failed_the_chain_gives_up_for_now():
    limited = Attempt("genai", FailureKind.RATE_LIMITED, 429)
    assert next_attempt(1, [limited]) == GiveUp((limited,), rejected=False)
    assert next_attempt(0, []) == GiveUp((), rejected=False)  # no provider at all


def test_a_rejected_request_stops_the_chain_with_providers_left():
    rejected = Attempt("genai", FailureKind.REJECTED, 400)
    assert next_attempt(3, [rejected]) == GiveUp((rejected,), rejected=True)
