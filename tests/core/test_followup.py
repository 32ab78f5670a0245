"""Follow-up questions read with the conversation before them (ragcore.chat.followup), and
the pipeline searching their standalone form."""

import attrs
import pytest

from ragcore.chat.citations import resolve_citations
from ragcore.chat.followup import (
    Exchange,
    is_follow_up,
    read_rewrite,
    rewrite_prompt,
    standalone_by_rule,
)
from ragcore.chat.history import continuation, turn_outcome
from ragcore.chat.pipeline import ChatAnswer, ChatRequest, answer_question
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.language import not_found
from tests.core.drive import drive
from tests.core.test_chat_pipeline import POLICY, recorded
from tests.core.test_citations import SOURCES

SHIRTS = Exchange("How long do I have to return shirts?", "Within 30 days [1].")


@pytest.mark.parametrize(
    ("question", "follows"),
    [
        ("and for shoes?", True),
        ("What about shoes?", True),
        ("Does it come in blue?", True),
        ("how much?", True),
        ("Und für Schuhe?", True),
        ("¿Y para los zapatos?", True),
        ("Et pour les chaussures ?", True),
        ("When does the shop open on Saturdays?", False),
        ("Which payment methods do you accept?", False),
        ("What are your opening hours?", False),
    ],
)
def test_a_follow_up_is_told_by_how_it_begins_points_back_or_is_short(question, follows):
    assert is_follow_up(question, [SHIRTS]) is follows


def test_without_a_conversation_nothing_is_a_follow_up():
    assert not is_follow_up("and for shoes?", [])
    assert standalone_by_rule("and for shoes?", []) == "and for shoes?"


def test_the_rule_joins_the_previous_question_as_it_was_searched():
    assert standalone_by_rule("and for shoes?", [SHIRTS]) == (
        "How long do I have to return shirts? and for shoes?"
    )
    earlier = Exchange(
        "and for shoes?", "14 days [1].", "How long to return shirts? and for shoes?"
    )
    assert standalone_by_rule("and hats?", [SHIRTS, earlier]) == (
        "How long to return shirts? and for shoes? and hats?"
    )
    assert standalone_by_rule("Which payment methods do you accept?", [SHIRTS]) == (
        "Which payment methods do you accept?"
    )


def test_the_model_rewrite_is_read_as_one_question():
    assert read_rewrite('  "How long do I have to return shoes?"\n', "x") == (
        "How long do I have to return shoes?"
    )
    assert read_rewrite("Rewritten question: Return window for shoes?", "x") == (
        "Return window for shoes?"
    )
    assert read_rewrite("   ", "and for shoes?") == "and for shoes?"
    assert read_rewrite("y" * 700, "and for shoes?") == "and for shoes?"
    prompt = rewrite_prompt("and for shoes?", [SHIRTS], "en")
    assert "Customer: How long do I have to return shirts?" in prompt.user
    assert prompt.user.endswith("Last question: and for shoes?")


def test_offline_the_follow_up_is_searched_with_the_question_before_it():
    request = ChatRequest("and for shoes?", history=(SHIRTS,))
    outcome, effects = drive(answer_question(request, POLICY), recorded())
    embed, search = (e for e in effects if isinstance(e, Embed | SearchChunks))
    joined = "How long do I have to return shirts? and for shoes?"
    assert embed.texts == (joined,) and search.text == joined
    assert outcome.search_question == joined
    generate = effects[-1]
    assert "Conversation so far" in generate.prompt.user
    assert "Customer: How long do I have to return shirts?" in generate.prompt.user


def test_with_a_model_the_follow_up_is_rewritten_by_it_first():
    policy = attrs.evolve(POLICY, rewrite_with_model=True)
    base = recorded()

    def answer(effect):
        if isinstance(effect, Generate) and effect.task == "rewrite":
            return ModelReply("How long do I have to return shoes?", "recorded", "m1")
        return base(effect)

    request = ChatRequest("and for shoes?", history=(SHIRTS,))
    outcome, effects = drive(answer_question(request, policy), answer)
    rewrite = next(e for e in effects if isinstance(e, Generate))
    assert rewrite.task == "rewrite" and rewrite.temperature == 0.0 and not rewrite.stream
    search = next(e for e in effects if isinstance(e, SearchChunks))
    assert search.text == "How long do I have to return shoes?"
    assert outcome.search_question == "How long do I have to return shoes?"


def test_a_failed_rewrite_falls_back_to_the_rule():
    policy = attrs.evolve(POLICY, rewrite_with_model=True)
    base = recorded()

    def failing(effect):
        if isinstance(effect, Generate) and effect.task == "rewrite":
            raise RuntimeError("the provider is down")
        return base(effect)

    request = ChatRequest("and for shoes?", history=(SHIRTS,))
    outcome, _ = drive(answer_question(request, policy), failing)
    assert outcome.search_question == "How long do I have to return shirts? and for shoes?"


def test_a_question_that_stands_alone_is_searched_as_asked():
    request = ChatRequest("Which payment methods do you accept?", history=(SHIRTS,))
    outcome, effects = drive(answer_question(request, POLICY), recorded())
    search = next(e for e in effects if isinstance(e, SearchChunks))
    assert search.text == "Which payment methods do you accept?"
    assert outcome.search_question is None


def test_a_turn_outcome_and_the_continuation_key():
    answered = ChatAnswer("Within 30 days [1].", (), None, "recorded", "m1")
    assert turn_outcome(answered) == "answered"
    assert turn_outcome(ChatAnswer(not_found("de"), (), None, None, None, language="de")) == (
        "not_found"
    )
    assert turn_outcome(ChatAnswer("limit", (), None, None, None, limited=True)) == "limited"
    assert continuation([]) is None
    key = continuation([SHIRTS])
    assert key == continuation([Exchange(" How long do I have to return  shirts?", SHIRTS.answer)])
    assert key != continuation([Exchange(SHIRTS.question, "Within 14 days [1].")])


def test_the_continuation_key_holds_for_an_answer_kept_as_it_streamed():
    """A streamed answer's client keeps its text as it streamed, a marker to no source
    included; the turn records it with that marker removed (``resolve_citations``)."""
    streamed = Exchange(SHIRTS.question, "Within 30 days [1] [9], unworn [2,7].")
    text, _ = resolve_citations(streamed.answer, SOURCES)
    assert text == "Within 30 days [1], unworn [2]."
    assert continuation([streamed]) == continuation([Exchange(SHIRTS.question, text)])


def test_with_a_model_a_question_that_stands_alone_costs_no_rewrite():
    policy = attrs.evolve(POLICY, rewrite_with_model=True)
    request = ChatRequest("Which payment methods do you accept?", history=(SHIRTS,))
    _, effects = drive(answer_question(request, policy), recorded())
    assert [e.task for e in effects if isinstance(e, Generate)] == ["answer"]
