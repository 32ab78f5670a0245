"""/employees, /employees/{role}/memory and /employees/{role}/context, and /profile."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import attrs

from ragcore.api.schema import described
from ragcore.chat.pipeline import MAX_QUESTION_CHARS
from ragcore.employees.editing import MAX_DISPLAY_NAME_CHARS, MAX_PERSONALITY_CHARS
from ragcore.employees.editing import EmployeePatch as EmployeePatch  # the body, beside its rules
from ragcore.employees.memory import MAX_IMPORTANCE, MIN_IMPORTANCE, Source
from ragcore.employees.memory import NewMemory as NewMemory  # the body, beside its rules
from ragcore.employees.profile import LearnedBy, Profile
from ragcore.employees.profile import ProfilePatch as ProfilePatch  # the body, by its rules
from ragcore.employees.roles import _IDENTIFIER, Autonomy

IDENTIFIER = _IDENTIFIER.pattern
IMPORTANCE = {"minimum": MIN_IMPORTANCE, "maximum": MAX_IMPORTANCE}
MAX_MEMORY_LIMIT = 500


@attrs.frozen
class SensitivityShown:
    """Why the role is (or is not) sensitive."""

    reason: Literal["marker", "built-in", "setting", "error", "none"]
    marker: str | None
    field: str | None
    setting: Annotated[
        str | None,
        described("SENSITIVE_ROLES_EXTRA or SENSITIVE_ROLES_REVIEWED_SAFE when a setting decided"),
    ]
    explanation: str


@attrs.frozen
class Employee:
    identifier: Annotated[
        str,
        described("lowercase letters, digits, _ and -, at most 64 characters", pattern=IDENTIFIER),
    ]
    display_name: Annotated[str, described(maxLength=MAX_DISPLAY_NAME_CHARS)]
    personality: Annotated[
        str,
        described(
            "tone, focus and limits; layered on top of the grounding instructions, never in place "
            "of them",
            maxLength=MAX_PERSONALITY_CHARS,
        ),
    ]
    channels: list[str]
    skill_tags: list[str]
    autonomy: Autonomy
    effective_autonomy: Annotated[
        Autonomy,
        described(
            "the autonomy it acts with: a sensitive role is capped at semi whatever is configured"
        ),
    ]
    built_in: bool
    sensitive: bool
    sensitivity: SensitivityShown
    created_at: datetime | None
    updated_at: datetime | None


@attrs.frozen
class Employees:
    employees: Annotated[list[Employee], described("the roles, built-in first")]


@attrs.frozen
class MemoryItem:
    id: int
    role: str
    text: str
    tags: list[str]
    source: Source
    importance: Annotated[int, described(**IMPORTANCE)]
    created_at: datetime | None
    similarity: Annotated[
        float, described("cosine similarity to ?query= (only when searching)")
    ] = 0.0


@attrs.frozen
class MemoryQuery:
    query: Annotated[str, described("nearest in meaning first", maxLength=MAX_QUESTION_CHARS)] = ""
    tags: Annotated[str, described("comma-separated: items with at least one of the tags")] = ""
    limit: Annotated[int, described(minimum=1, maximum=MAX_MEMORY_LIMIT)] = 100


@attrs.frozen
class Memory:
    role: str
    memory: list[MemoryItem]


@attrs.frozen
class ContextQuery:
    query: Annotated[
        str, described("the question the context is for", maxLength=MAX_QUESTION_CHARS)
    ]


@attrs.frozen
class RoleContext:
    role: str
    query: str
    text: Annotated[str, described("exactly the role context injected into the prompt")]
    chars: int
    budget_chars: int
    dropped: Annotated[int, described("items left out to keep within the budget")]
    items: list[MemoryItem]


@attrs.frozen
class ProfileLearned(Profile):
    learned_by: Annotated[Literal["llm", "extractive"], described("how the summary was made")] = (
        "extractive"
    )

    @classmethod
    def of(cls, profile: Profile, learned_by: LearnedBy) -> ProfileLearned:
        return cls(**attrs.asdict(profile, recurse=False), learned_by=learned_by)
