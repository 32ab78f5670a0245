from types import SimpleNamespace

import attrs
import pytest

from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.roles import AUTONOMY_LEVELS, Role
from ragcore.employees.sensitivity import (
    BUILT_IN_SENSITIVE,
    SETTING_EXTRA,
    SETTING_REVIEWED_SAFE,
    Sensitivity,
    assess_sensitivity,
    effective_autonomy,
    words,
)


def runtime(identifier="helper", display_name="Helper", tags=()):
    return Role(identifier, display_name, "Helps.", skill_tags=tags)


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        ("tax_lawyer_bot", "tax"),
        ("Medical-Intake", "medical"),
        ("immigration helper", "immigration"),
        ("visa-desk", "visa"),
        ("InsuranceClaims", "insurance"),
        ("HRLegal", "legal"),
        ("patient_portal", "patient"),
        ("regulatory filings", "regulatory"),
    ],
)
def test_marker_words_make_a_role_sensitive_wherever_they_are(name, marker):
    ident = "-".join(words(name))
    for role, field in (
        (runtime(identifier=ident), "identifier"),
        (runtime(display_name=name), "display name"),
        (runtime(tags=("general", name)), "skill tags"),
    ):
        result = assess_sensitivity(role)
        assert result.sensitive, (role, result)
        assert (result.reason, result.marker, result.field) == ("marker", marker, field)
        assert result.reasoning_mode and result.grounding_check
        assert marker in result.explain()


@pytest.mark.parametrize(
    "name",
    ["taxonomy_bot", "healthy_recipes", "lawn_care_agent", "Taxonomy", "lawnmower", "Visage"],
)
def test_marker_letters_inside_other_words_do_not_count(name):
    role = runtime(identifier=name.lower(), display_name=name, tags=(name,))
    result = assess_sensitivity(role)
    assert result == Sensitivity(False, "none")
    assert not result.reasoning_mode and not result.grounding_check


def test_words_split_on_separators_case_and_digits():
    assert words("tax_lawyer_bot") == ["tax", "lawyer", "bot"]
    assert words("Medical-Intake") == ["medical", "intake"]
    assert words("medicalIntake HRLegal tax2024") == [
        "medical",
        "intake",
        "hr",
        "legal",
        "tax",
        "2024",
    ]


def test_built_in_sensitive_roles_are_finance_and_hr_by_their_tags():
    assert frozenset({"finance", "hr"}) == BUILT_IN_SENSITIVE
    assert assess_sensitivity(BUILT_IN["finance"]).marker == "tax"
    assert assess_sensitivity(BUILT_IN["hr"]).marker == "law"
    for name, role in BUILT_IN.items():
        assert assess_sensitivity(role).sensitive == (name in BUILT_IN_SENSITIVE)


def test_extra_setting_adds_roles():
    result = assess_sensitivity(runtime("bakery-helper"), extra=("bakery-helper",))
    assert result.sensitive and result.setting == SETTING_EXTRA
    assert SETTING_EXTRA in result.explain()
    assert assess_sensitivity(BUILT_IN["sales"], extra=("sales",)).sensitive
    assert not assess_sensitivity(runtime("bakery-helper"), extra=("other",)).sensitive


def test_reviewed_safe_exempts_a_runtime_role_from_its_marker():
    role = runtime("visa-photo-booth", tags=("photos",))
    result = assess_sensitivity(role, reviewed_safe=("visa-photo-booth",))
    assert not result.sensitive
    assert (result.reason, result.marker, result.setting) == (
        "setting",
        "visa",
        SETTING_REVIEWED_SAFE,
    )
    assert SETTING_REVIEWED_SAFE in result.explain()


def test_reviewed_safe_never_exempts_from_the_extra_setting():
    role = runtime("visa-photo-booth")
    result = assess_sensitivity(
        role, extra=("visa-photo-booth",), reviewed_safe=("visa-photo-booth",)
    )
    assert result.sensitive and result.setting == SETTING_EXTRA


@pytest.mark.parametrize("name", sorted(BUILT_IN_SENSITIVE))
def test_built_in_sensitive_roles_can_never_be_exempted(name):
    role = BUILT_IN[name]
    assert assess_sensitivity(role, reviewed_safe=(name,)).sensitive
    # not even after the owner edits away the marker tags
    edited = attrs.evolve(role, skill_tags=("invoices",), display_name="Money")
    result = assess_sensitivity(edited, reviewed_safe=(name,))
    assert result.sensitive and result.reason == "built-in"
    assert "never be exempted" in result.explain()


def test_reviewed_safe_does_not_exempt_a_built_in_role_given_a_marker():
    edited = attrs.evolve(BUILT_IN["support"], skill_tags=("medical", "orders"))
    assert assess_sensitivity(edited, reviewed_safe=("support",)).sensitive


@pytest.mark.parametrize(
    "broken",
    [
        SimpleNamespace(identifier="helper"),  # missing fields
        SimpleNamespace(identifier="helper", display_name="Helper", skill_tags=(None,)),
        SimpleNamespace(identifier=None, display_name="Helper", skill_tags=()),
    ],
)
def test_an_internal_error_counts_as_sensitive(broken):
    result = assess_sensitivity(broken)  # type: ignore[arg-type]
    assert result == Sensitivity(True, "error")
    assert result.reasoning_mode and result.grounding_check
    assert "failed" in result.explain()


def test_bad_settings_values_fail_closed_too():
    assert assess_sensitivity(runtime("helper"), extra=(None,)).sensitive  # type: ignore[arg-type]


@pytest.mark.parametrize("configured", AUTONOMY_LEVELS)
def test_sensitive_roles_are_capped_at_semi(configured):
    sensitive = Sensitivity(True, "marker", "tax", "identifier")
    expected = {"off": "off", "semi": "semi", "full": "semi"}[configured]
    assert effective_autonomy(configured, sensitive) == expected
    assert effective_autonomy(configured, Sensitivity(False, "none")) == configured
    assert effective_autonomy(configured, Sensitivity(True, "error")) in ("off", "semi")
