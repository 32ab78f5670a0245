"""The learning rule (ragcore.employees.learning) without a database."""

from datetime import UTC, datetime, timedelta

from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.effects import LearnPattern, RecordInteraction
from ragcore.employees.learning import (
    PATTERN_TAG,
    History,
    LearningPolicy,
    PastQuestion,
    asker_hash,
    interaction,
    lesson,
    pattern_text,
)
from ragcore.employees.roles import Role
from tests.core.drive import drive
from tests.core.test_chat_pipeline import POLICY, recorded

T0 = datetime(2026, 11, 1, tzinfo=UTC)
POLICY_3 = LearningPolicy(min_askers=3)


def past(id, asker, question="When do you open?", documents=("hours.md",), days=0):
    return PastQuestion(id, asker_hash(asker), question, documents, T0 + timedelta(days=days))


def test_three_people_asking_teach_one_pattern_from_the_earliest_question():
    history = History(
        recorded=True,
        similar=(
            past(7, "ann", "what time do you open on saturday?", ("hours.md",), days=2),
            past(3, "bob", "When do you open?", ("hours.md", "faq.md"), days=0),
            past(9, "cy", "opening hours?", ("hours.md",), days=3),
        ),
    )
    found = lesson(history, POLICY_3)
    assert found.source_id == 3 and found.spent_ids == (7, 9)
    assert found.memory.text == pattern_text("When do you open?", ["hours.md", "faq.md"])
    assert found.memory.text == (
        'People often ask: "When do you open?". It is answered in: hours.md, faq.md.'
    )
    assert (found.memory.source, found.memory.tags) == ("learned", (PATTERN_TAG,))


def test_one_chatty_user_teaches_nothing():
    history = History(True, tuple(past(i, "ann") for i in range(50)) + (past(99, "bob"),))
    assert lesson(history, POLICY_3) is None


def test_a_known_pattern_or_an_unrecorded_question_teaches_nothing():
    similar = (past(1, "ann"), past(2, "bob"), past(3, "cy"))
    assert lesson(History(True, similar, known=True), POLICY_3) is None
    assert lesson(History(False, similar), POLICY_3) is None


def test_only_grounded_answers_as_a_role_are_recorded():
    assert interaction(None, "ann", "q", (0.1,), ["a.md"], None) is None  # no role
    assert interaction("support", "ann", "q", (0.1,), [], None) is None  # nothing cited
    assert interaction("finance", "ann", "q", (0.1,), ["a.md"], False) is None  # ungrounded
    record = interaction("support", "ann", "q", (0.1,), ["a.md", "a.md", "b.md"], None)
    assert record.documents == ("a.md", "b.md") and record.asker_hash == asker_hash("ann")
    assert "ann" not in record.asker_hash  # kept as a hash only
    assert asker_hash(None) == asker_hash("api") != asker_hash("ann")


def test_a_long_question_is_clipped_in_the_pattern():
    text = pattern_text("why " * 200, ["a.md"])
    assert len(text) < 400 and text.endswith("…\". It is answered in: a.md.")


SUPPORT = Role("support", "Support", "You help customers.")


def test_an_answer_as_a_role_is_recorded_and_a_completed_pattern_is_learned():
    history = History(True, (past(1, "ann"), past(2, "bob"), past(3, "cy")))
    base = recorded()

    def answer(effect):
        if isinstance(effect, RecordInteraction):
            return history
        if isinstance(effect, LearnPattern):
            return None
        return base(effect)

    request = ChatRequest("When do you open?", employee=SUPPORT, asker="cy")
    outcome, effects = drive(answer_question(request, POLICY), answer)
    record, learn = effects[-2:]
    assert isinstance(record, RecordInteraction) and isinstance(learn, LearnPattern)
    assert record.interaction.question == "When do you open?"
    assert record.interaction.documents == ("refunds.md",)
    assert record.interaction.asker_hash == asker_hash("cy")
    assert learn.role == "support" and learn.lesson.source_id == 1
    assert outcome.answer == "Within 30 days [1]."


def test_without_learning_nothing_is_recorded():
    policy = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2,
                        learning=None)  # fmt: skip
    _, effects = drive(answer_question(ChatRequest("q?", employee=SUPPORT), policy), recorded())
    assert not any(isinstance(e, RecordInteraction) for e in effects)
