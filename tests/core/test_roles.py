import re

import attrs
import pytest

from ragcore.employees.builtin import BUILT_IN, built_in_role
from ragcore.employees.roles import (
    AUTONOMY_LEVELS,
    BUILT_IN_ROLES,
    Role,
    autonomy_rank,
    check_autonomy,
    check_role_identifier,
)
from ragcore.errors import InvalidInput


def test_the_nine_built_in_roles_are_defined_in_order():
    assert tuple(BUILT_IN) == BUILT_IN_ROLES
    assert len(BUILT_IN) == 9
    assert built_in_role("support") is BUILT_IN["support"]
    assert built_in_role("lawyer") is None


@pytest.mark.parametrize("identifier", BUILT_IN_ROLES)
def test_every_built_in_role_is_complete_real_content(identifier):
    role = BUILT_IN[identifier]
    assert check_role_identifier(role.identifier) == identifier
    assert role.built_in
    assert role.display_name.strip()
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", role.personality) if s.strip()]
    assert len(sentences) >= 4, role.personality
    assert len(role.personality) >= 300
    assert role.channels and all(check_role_identifier(c) for c in role.channels)
    assert role.skill_tags and all(check_role_identifier(t) for t in role.skill_tags)
    assert role.autonomy in AUTONOMY_LEVELS
    assert 2 <= len(role.memory_seeds) <= 4
    assert len(set(role.memory_seeds)) == len(role.memory_seeds)


def test_personalities_are_all_different():
    assert len({role.personality for role in BUILT_IN.values()}) == 9


def test_role_is_frozen_and_stores_tuples():
    role = Role("x", "X", "p", channels=["api"], skill_tags=["a"], memory_seeds=["s"])
    assert role.channels == ("api",) and role.skill_tags == ("a",)
    assert not role.built_in
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        role.identifier = "y"  # type: ignore[misc]


@pytest.mark.parametrize("bad", ["", "Sales", "sales team", "a" * 65, "café", None, 3])
def test_identifiers_outside_the_rule_are_refused_with_the_rule(bad):
    with pytest.raises(InvalidInput) as err:
        check_role_identifier(bad)
    assert "lowercase letters, digits, _ and -, at most 64 characters" in err.value.message


def test_autonomy_levels_are_ordered_and_checked():
    assert AUTONOMY_LEVELS == ("off", "semi", "full")
    assert autonomy_rank("off") < autonomy_rank("semi") < autonomy_rank("full")
    assert check_autonomy("semi") == "semi"
    with pytest.raises(InvalidInput):
        check_autonomy("auto")
