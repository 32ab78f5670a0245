"""Rule 13 for answers: a sensitive role reasons first and shows only its final answer,
and a second, low-temperature pass judges that answer against the sources."""

import pytest

from ragcore.chat.grounding import CAVEATS, CHECK_INSTRUCTIONS, parse_verdict
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.chat.reasoning import final_answer
from ragcore.employees.roles import Role
from ragcore.generation import Generate, ModelReply
from ragcore.usage import (
    Allowed,
    Capped,
    CheckBudget,
    Reservation,
    ReserveTokens,
    SettleTokens,
    TokenUsage,
)
from tests.core.drive import drive
from tests.core.test_chat_pipeline import POLICY, recorded

TAX = Role("tax_helper", "Tax Helper", "You explain our filing checklist.")
PLAIN = Role("greeter", "Greeter", "You welcome visitors.")
REASONED = "<reasoning>Source 1 says 30 days.</reasoning>\n<answer>Within 30 days [1].</answer>"


def judged(answer_reply, verdict, usage=None):
    """Recorded results, with the judge's ``verdict`` for the check (an exception is raised)."""
    base = recorded(reply=answer_reply)

    def answer(effect):
        if isinstance(effect, Generate) and effect.task == "check":
            if isinstance(verdict, Exception):
                raise verdict
            return ModelReply(verdict, provider="recorded", model="judge", usage=usage)
        return base(effect)

    return answer


@pytest.mark.parametrize(
    "reply, shown",
    [
        (REASONED, "Within 30 days [1]."),
        ("<think>30 days, source 1</think>Within 30 days [1].", "Within 30 days [1]."),
        ("<REASONING>a</REASONING>\n\nWithin 30 days [1].", "Within 30 days [1]."),
        ("<answer>Within 30 days [1].", "Within 30 days [1]."),  # cut short after the answer
        ("<reasoning>Source 1 says 30 days but I was cut", ""),  # cut short while reasoning
        ("Within 30 days [1].", "Within 30 days [1]."),  # a model that skipped the tags
    ],
)
def test_only_the_final_answer_is_kept(reply, shown):
    assert final_answer(reply) == shown


@pytest.mark.parametrize(
    "verdict, grounded",
    [
        ("GROUNDED", True),
        ("grounded.", True),
        ("NOT_GROUNDED", False),
        ("Not grounded", False),
        ("GROUNDED? No: NOT_GROUNDED", False),
        ("UNGROUNDED", False),
        ("I cannot tell", False),
        ("", False),
    ],
)
def test_only_a_clear_grounded_verdict_passes(verdict, grounded):
    assert parse_verdict(verdict) is grounded


def test_a_sensitive_role_reasons_then_its_answer_is_checked_at_low_temperature():
    outcome, effects = drive(
        answer_question(ChatRequest("return?", employee=TAX), POLICY), judged(REASONED, "GROUNDED")
    )
    answer, check = [e for e in effects if isinstance(e, Generate)]
    assert not answer.stream and answer.temperature == POLICY.temperature
    assert (check.task, check.temperature, check.stream) == ("check", 0.0, False)
    assert check.max_output_tokens == 256  # room for a model that thinks before its verdict
    assert check.prompt.system == CHECK_INSTRUCTIONS
    assert "Within 30 days [1]." in check.prompt.user and "<reasoning>" not in check.prompt.user
    assert "[1] Returns are accepted within 30 days." in check.prompt.user  # the same sources
    assert outcome.answer == "Within 30 days [1]." and outcome.grounded is True
    assert [c.number for c in outcome.citations] == [1]


@pytest.mark.parametrize("verdict", ["NOT_GROUNDED", "maybe", RuntimeError("judge is down")])
def test_an_answer_not_judged_grounded_carries_the_caveat(verdict):
    outcome, _ = drive(
        answer_question(ChatRequest("return?", employee=TAX), POLICY), judged(REASONED, verdict)
    )
    assert outcome.answer == "Within 30 days [1].\n\n" + CAVEATS["en"]
    assert outcome.grounded is False
    assert [c.number for c in outcome.citations] == [1]  # the answer itself is kept


def test_reasoning_alone_is_never_shown():
    outcome, effects = drive(
        answer_question(ChatRequest("return?", employee=TAX), POLICY),
        judged("<reasoning>Source 1 says", "GROUNDED"),
    )
    assert outcome.answer == CAVEATS["en"] and outcome.grounded is False
    assert [e.task for e in effects if isinstance(e, Generate)] == ["answer"]  # nothing to judge


def test_a_quoted_extractive_answer_needs_no_judge():
    def extractive(effect):
        if isinstance(effect, Generate):
            return ModelReply(
                "Returns are accepted within 30 days [1].", "extractive", "extractive"
            )
        return recorded()(effect)

    outcome, effects = drive(
        answer_question(ChatRequest("return?", employee=TAX), POLICY), extractive
    )
    assert outcome.grounded is True and CAVEATS["en"] not in outcome.answer
    assert len([e for e in effects if isinstance(e, Generate)]) == 1


def test_other_roles_stream_and_are_not_checked():
    outcome, effects = drive(
        answer_question(ChatRequest("return?", employee=PLAIN), POLICY), recorded()
    )
    [answer] = [e for e in effects if isinstance(e, Generate)]
    assert answer.stream and outcome.grounded is None


def test_the_check_is_a_call_of_its_own_in_the_usage_ledger():
    policy = ChatPolicy(
        max_context_chars=12000, max_output_tokens=256, temperature=0.2, usage_ledger=True
    )
    base = judged(REASONED, "GROUNDED", usage=TokenUsage(300, 1))
    holds = iter(range(7, 100))

    def answer(effect):
        if isinstance(effect, CheckBudget):
            return Allowed()
        if isinstance(effect, ReserveTokens):
            return Reservation(next(holds), effect.max_output_tokens)
        if isinstance(effect, SettleTokens):
            return None
        if isinstance(effect, Generate) and effect.task == "answer":
            return ModelReply(REASONED, "recorded", "m1", usage=TokenUsage(500, 40))
        return base(effect)

    outcome, effects = drive(answer_question(ChatRequest("return?", employee=TAX), policy), answer)
    reserves = [e for e in effects if isinstance(e, ReserveTokens)]
    settles = [e for e in effects if isinstance(e, SettleTokens)]
    assert [r.role for r in reserves] == ["tax_helper", "tax_helper"]  # the answer, the judge
    assert settles == [  # each call settled once it is made: the answer, then the judge
        SettleTokens(7, "recorded", "m1", TokenUsage(500, 40)),
        SettleTokens(8, "recorded", "judge", TokenUsage(300, 1)),
    ]
    assert outcome.usage == TokenUsage(500, 40) and outcome.check_usage == TokenUsage(300, 1)


def test_a_judge_stopped_by_a_budget_is_not_asked_and_the_answer_gets_the_caveat():
    policy = ChatPolicy(
        max_context_chars=12000, max_output_tokens=256, temperature=0.2, usage_ledger=True
    )
    decisions = iter([Reservation(7, 256), Capped("daily", 1000, 1000)])

    def answer(effect):
        if isinstance(effect, CheckBudget):
            return Allowed()
        if isinstance(effect, ReserveTokens):
            return next(decisions)
        if isinstance(effect, SettleTokens):
            return None
        return judged(REASONED, "GROUNDED")(effect)

    outcome, effects = drive(answer_question(ChatRequest("return?", employee=TAX), policy), answer)
    assert [e.task for e in effects if isinstance(e, Generate)] == ["answer"]
    assert outcome.grounded is False and outcome.answer.endswith(CAVEATS["en"])
