"""One model call held to the budgets: reserve, call, settle; release on failure."""

import pytest

from ragcore.generation import Abandoned, Generate, ModelReply, Prompt
from ragcore.metering import metered_generate
from ragcore.usage import (
    Capped,
    Caps,
    ReleaseTokens,
    Reservation,
    ReserveTokens,
    SettleTokens,
    TokenUsage,
)
from tests.core.drive import drive

REQUEST = Generate(Prompt("system", "user words here", "q", ()), 100, 0.2, task="summary")


def answering(reply):
    def answer(effect):
        match effect:
            case ReserveTokens():
                return Reservation(3, effect.max_output_tokens)
            case Generate():
                if isinstance(reply, Exception):
                    raise reply
                return reply
        return None

    return answer


def test_a_call_is_reserved_then_settled_with_what_it_used():
    reply = ModelReply("a summary", "p", "m", usage=TokenUsage(40, 2))
    outcome, effects = drive(metered_generate(REQUEST, None, Caps(), True), answering(reply))
    reserve, call, settle = effects
    # the prompt as sent ("system" + "user words here", 4 characters a token), all its output
    assert reserve == ReserveTokens(None, 6, Caps(), 100, 100)
    assert call is REQUEST
    assert settle == SettleTokens(3, "p", "m", TokenUsage(40, 2)) and outcome is reply


def test_a_call_that_may_write_less_is_sent_with_the_output_the_caps_leave():
    reply = ModelReply("a short summary", "p", "m", usage=TokenUsage(6, 3))
    gen = metered_generate(REQUEST, "sales", Caps(daily=50), True, min_output_tokens=32)
    reserve = next(gen)
    assert (reserve.max_output_tokens, reserve.min_output_tokens) == (100, 32)
    call = gen.send(Reservation(4, output_tokens=40))
    assert call.max_output_tokens == 40 and call.prompt is REQUEST.prompt
    assert gen.send(reply) == SettleTokens(4, "p", "m", TokenUsage(6, 3))


@pytest.mark.parametrize("ledger", [True, False])
def test_the_call_names_the_role_it_is_made_for(ledger):
    """For the metrics (tokens by role); the providers never see it."""
    reply = ModelReply("an answer", "p", "m", usage=TokenUsage(6, 3))
    _, effects = drive(metered_generate(REQUEST, "sales", Caps(), ledger), answering(reply))
    [call] = [effect for effect in effects if isinstance(effect, Generate)]
    assert call.role == "sales" and call.prompt is REQUEST.prompt


def test_a_failed_call_releases_its_hold_and_raises():
    with pytest.raises(RuntimeError):
        drive(metered_generate(REQUEST, None, Caps(), True), answering(RuntimeError("down")))
    gen = metered_generate(REQUEST, None, Caps(), True)
    assert isinstance(next(gen), ReserveTokens)
    assert gen.send(Reservation(3, 100)) is REQUEST
    assert gen.throw(RuntimeError("down")) == ReleaseTokens(3)


def test_a_call_abandoned_before_any_text_releases_its_hold():
    gen = metered_generate(REQUEST, None, Caps(), True)
    next(gen)
    gen.send(Reservation(3, 100))
    assert gen.throw(Abandoned()) == ReleaseTokens(3)
    with pytest.raises(Abandoned):
        gen.send(None)


@pytest.mark.parametrize(
    ("counted", "usage"),
    [
        # no counts from the provider: the prompt and the 9 characters streamed, estimated
        (None, TokenUsage(6, 3, estimated=True)),
        (TokenUsage(41, 2), TokenUsage(41, 2)),  # the provider's counts when it sent them
    ],
)
def test_a_call_cut_off_mid_stream_settles_what_it_spent(counted, usage):
    """The client left while the reply streamed: the provider billed the prompt and the
    output so far, so the hold is settled with them (not released), and the call raises."""
    gen = metered_generate(REQUEST, "sales", Caps(), True)
    next(gen)
    gen.send(Reservation(3, 100))
    partial = ModelReply("the first", "p", "m", usage=counted)
    assert gen.throw(Abandoned(partial)) == SettleTokens(3, "p", "m", usage)
    with pytest.raises(Abandoned):
        gen.send(None)


def test_at_a_cap_nothing_is_called():
    capped = Capped("daily", 10, 12)
    outcome, effects = drive(
        metered_generate(REQUEST, None, Caps(daily=10), True), lambda effect: capped
    )
    assert outcome is capped and [type(e) for e in effects] == [ReserveTokens]


def test_without_the_ledger_the_call_is_made_alone():
    reply = ModelReply("a summary", "p", "m")
    outcome, effects = drive(metered_generate(REQUEST, None, Caps(), False), answering(reply))
    assert effects == [REQUEST] and outcome is reply
