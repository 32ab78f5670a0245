"""Editing roles (the PATCH rules) and answering as a role, without a server."""

import pytest

from ragcore.api.employees import Employee
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.converter import converter
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.editing import (
    EDITABLE_FIELDS,
    EmployeePatch,
    apply_patch,
    check_patch,
    follow_defaults,
)
from ragcore.employees.layering import REASONING_INSTRUCTIONS
from ragcore.employees.roles import Role
from ragcore.employees.sensitivity import assess_sensitivity
from ragcore.errors import InvalidInput
from ragcore.generation import GROUNDING_INSTRUCTIONS, Generate
from tests.core.drive import drive
from tests.core.test_chat_pipeline import POLICY, recorded

TAX = Role("tax_lawyer_bot", "Tax Lawyer", "You explain our filing checklist.", autonomy="full")


def test_a_patch_changes_only_the_fields_given():
    patch = check_patch({"channels": ["api", "telegram", "api"], "autonomy": "off"})
    support = BUILT_IN["support"]
    edited = apply_patch("support", support, patch)
    assert edited.channels == ("api", "telegram")  # repeats dropped, order kept
    assert edited.autonomy == "off"
    assert edited.personality == support.personality and edited.skill_tags == support.skill_tags


@pytest.mark.parametrize(
    "body, field",
    [
        ({"mood": "x"}, "mood"),
        ({"identifier": "x"}, "identifier"),
        ({"autonomy": "always"}, "autonomy"),
        ({"channels": "api"}, "channels"),
        ({"skill_tags": ["Tax Law"]}, "skill_tags"),
        ({"display_name": 3}, "display_name"),
        ({"personality": "x" * 8001}, "personality"),
    ],
)
def test_bad_patches_name_the_field(body, field):
    with pytest.raises(InvalidInput) as err:
        check_patch(body)
    assert field in err.value.field


def test_a_new_role_needs_a_valid_identifier_a_display_name_and_a_personality():
    with pytest.raises(InvalidInput) as err:
        apply_patch("Tax Bot", None, EmployeePatch(display_name="T", personality="p"))
    assert "lowercase letters" in err.value.message
    with pytest.raises(InvalidInput) as err:
        apply_patch("tax-bot", None, EmployeePatch(channels=("api",)))
    assert err.value.field == "display_name, personality"
    created = apply_patch("tax-bot", None, EmployeePatch(display_name="T", personality="p"))
    assert created == Role("tax-bot", "T", "p") and not created.built_in


def test_the_view_says_why_a_role_is_sensitive_and_caps_its_autonomy():
    view = converter.unstructure(Employee.of(TAX, assess_sensitivity(TAX)))
    assert view["sensitive"] and view["sensitivity"]["marker"] == "tax"
    assert (view["autonomy"], view["effective_autonomy"]) == ("full", "semi")


def test_the_role_block_comes_after_the_grounding_and_language_lines():
    _, effects = drive(answer_question(ChatRequest("return?", employee=TAX), POLICY), recorded())
    generate, check = [e for e in effects if isinstance(e, Generate)]
    assert (generate.task, check.task) == ("answer", "check")
    system = generate.prompt.system
    assert system.startswith(GROUNDING_INSTRUCTIONS + "\n- Write the answer in English.\n\n")
    assert TAX.personality in system and system.endswith(REASONING_INSTRUCTIONS)


def test_settings_reach_the_role_block():
    policy = ChatPolicy(
        max_context_chars=12000, max_output_tokens=256, temperature=0.2,
        reviewed_safe=("tax_lawyer_bot",),
    )  # fmt: skip
    _, effects = drive(answer_question(ChatRequest("return?", employee=TAX), policy), recorded())
    [generate] = [e for e in effects if isinstance(e, Generate)]  # reviewed safe: no check
    assert REASONING_INSTRUCTIONS not in generate.prompt.system


def test_a_role_without_its_stored_role_is_never_dropped_silently():
    with pytest.raises(ValueError, match="without the stored role"):
        drive(answer_question(ChatRequest("return?", "sales"), POLICY), recorded())


def test_a_built_in_role_follows_the_codes_defaults_where_the_owner_did_not_edit_it():
    default = BUILT_IN["support"]
    old = Role("support", "Old name", "Old words.", channels=("api",), autonomy="off")
    followed = follow_defaults(old, default, edited=("personality",))
    assert followed.personality == "Old words."  # the owner's edit
    assert followed.display_name == default.display_name
    assert followed.channels == default.channels and followed.autonomy == default.autonomy
    assert follow_defaults(old, default, edited=EDITABLE_FIELDS) == old
