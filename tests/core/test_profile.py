"""The business profile's pure rules: the PATCH check, the offline summary, the learning
pipeline and the profile's place in every role's context."""

from __future__ import annotations

import pytest

from ragcore.employees.memory import MemoryItem, assemble_context
from ragcore.employees.profile import (
    MAX_SUMMARY_CHARS,
    Activity,
    ActivityDocument,
    Profile,
    check_profile_patch,
    extractive_summary,
    first_line,
    learn_summary,
    profile_items,
)
from ragcore.errors import InvalidInput
from ragcore.generation import Generate, ModelReply
from tests.core.drive import drive

ACTIVITY = Activity(
    documents=(
        ActivityDocument("faq.md", "Opening hours"),
        ActivityDocument("prices.csv", ""),
    ),
    memories=("Mention the 30-day guarantee", "Customers often ask about e-bike batteries."),
)


def test_owner_fields_are_checked_and_tidied():
    checked = check_profile_patch(
        {"description": "  A bike shop.\n", "tone": " warm   and brief ", "language": "DE"}
    )
    assert checked == {"description": "A bike shop.", "tone": "warm and brief", "language": "de"}
    assert check_profile_patch({"products": None, "language": ""}) == {
        "products": "",
        "language": "",
    }


def test_the_handoff_fields_are_the_businesss_name_hours_and_time_zone():
    checked = check_profile_patch(
        {
            "name": " Velo  Corner ",
            "opening_hours": " Tue-Sat 09:30-18:00 ",
            "timezone": "Europe/Brussels",
        }
    )
    assert checked == {
        "name": "Velo Corner",
        "opening_hours": "Tue-Sat 09:30-18:00",
        "timezone": "Europe/Brussels",
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"learned_summary": "x"}, "learned_summary"),
        ({"updated_at": "x"}, "updated_at"),
        ({"colour": "red"}, "colour"),
        ({}, "body"),
        ({"language": "xx"}, "language"),
        ({"language": "eng"}, "language"),
        ({"description": "x" * 601}, "description"),
        ({"tone": 5}, "tone"),
        ({"opening_hours": "from nine to five"}, "opening_hours"),
        ({"opening_hours": "Mon 9-17; " * 40}, "opening_hours"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"timezone": " Europe/Berlin"}, "timezone"),
        ({"name": "x" * 121}, "name"),
    ],
)
def test_bad_patches_are_refused_by_name(body, field):
    with pytest.raises(InvalidInput) as refused:
        check_profile_patch(body)
    assert refused.value.field == field


def test_first_line_skips_blanks_and_heading_marks():
    assert first_line("\n\n## Opening   hours\nText") == "Opening hours"
    assert len(first_line("word " * 100)) <= 160


def test_the_offline_summary_names_the_documents_and_is_deterministic():
    summary = extractive_summary(ACTIVITY)
    assert summary == (
        "Documents (2): faq.md (Opening hours); prices.csv. "
        "Noted: Mention the 30-day guarantee. Customers often ask about e-bike batteries."
    )
    assert extractive_summary(ACTIVITY) == summary
    assert extractive_summary(Activity()) == ""
    many = Activity(memories=tuple(f"note {i} " + "word " * 40 for i in range(12)))
    assert len(extractive_summary(many)) <= MAX_SUMMARY_CHARS


def test_learning_offline_asks_nothing():
    (summary, how), effects = drive(learn_summary(ACTIVITY, Profile(), use_llm=False), None)
    assert effects == [] and how == "extractive"
    assert summary == extractive_summary(ACTIVITY)


def test_learning_with_an_llm_sends_one_short_prompt():
    profile = Profile(description="A bike shop.", language="fr")
    reply = ModelReply("  Un magasin de vélos.\n", "openai", "m")
    (summary, how), effects = drive(learn_summary(ACTIVITY, profile, use_llm=True), lambda e: reply)
    assert (summary, how) == ("Un magasin de vélos.", "llm")
    [generate] = effects
    assert isinstance(generate, Generate) and generate.prompt.language == "fr"
    assert "Document: faq.md: Opening hours" in generate.prompt.user
    assert "A bike shop." in generate.prompt.user


def test_a_failing_model_falls_back_to_the_offline_summary():
    pipeline = learn_summary(ACTIVITY, Profile(), use_llm=True)
    assert isinstance(next(pipeline), Generate)
    with pytest.raises(StopIteration) as done:
        pipeline.throw(RuntimeError("provider down"))
    assert done.value.value == (extractive_summary(ACTIVITY), "extractive")


def test_the_profile_is_the_business_profile_part_of_the_context():
    profile = Profile(description="A bike shop.", tone="Warm.", learned_summary="Docs: faq.md.")
    owner = MemoryItem(1, "support", "Be brief.", (), "owner", 3)
    learned = MemoryItem(2, "support", "People ask about hours.", (), "learned", 3, similarity=0.9)
    context = assemble_context([learned, *profile_items("support", profile), owner])
    assert context.text == (
        "Owner instructions:\n- Be brief.\n\n"
        "Business profile:\n- About the business: A bike shop.\n- Tone: Warm.\n"
        "- Recent activity: Docs: faq.md.\n\n"
        "Learned patterns:\n- People ask about hours."
    )
    assert profile_items("support", Profile()) == []
    assert profile_items("support", None) == []
