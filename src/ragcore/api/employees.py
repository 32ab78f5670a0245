"""/employees, /employees/{role}/memory and /employees/{role}/context, and /profile."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ragcore.api.schema import described
from ragcore.chat.pipeline import MAX_QUESTION_CHARS
from ragcore.employees.editing import MAX_DISPLAY_NAME_CHARS, MAX_LIST_ITEMS, MAX_PERSONALITY_CHARS
from ragcore.employees.memory import (
    DEFAULT_IMPORTANCE,
    MAX_IMPORTANCE,
    MAX_MEMORY_CHARS,
    MAX_TAGS,
    MIN_IMPORTANCE,
    Source,
)
from ragcore.employees.profile import OWNER_FIELDS, Profile
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
    setting: str | None = described(
        "SENSITIVE_ROLES_EXTRA or SENSITIVE_ROLES_REVIEWED_SAFE when a setting decided"
    )
    explanation: str


@attrs.frozen
class Employee:
    identifier: str = described(
        "lowercase letters, digits, _ and -, at most 64 characters", pattern=IDENTIFIER
    )
    display_name: str = described(maxLength=MAX_DISPLAY_NAME_CHARS)
    personality: str = described(
        "tone, focus and limits; layered on top of the grounding instructions, never in place "
        "of them",
        maxLength=MAX_PERSONALITY_CHARS,
    )
    channels: list[str]
    skill_tags: list[str]
    autonomy: Autonomy
    effective_autonomy: Autonomy = described(
        "the autonomy it acts with: a sensitive role is capped at semi whatever is configured"
    )
    built_in: bool
    sensitive: bool
    sensitivity: SensitivityShown
    created_at: datetime | None
    updated_at: datetime | None


@attrs.frozen
class Employees:
    employees: list[Employee] = described("the roles, built-in first")


@attrs.frozen
class EmployeePatch:
    """The fields to change; display_name and personality are required to create a
    runtime role. Unknown fields are refused (422)."""

    display_name: str = described(maxLength=MAX_DISPLAY_NAME_CHARS, default="")
    personality: str = described(maxLength=MAX_PERSONALITY_CHARS, default="")
    channels: list[str] = described(maxItems=MAX_LIST_ITEMS, default=list)
    skill_tags: list[str] = described(maxItems=MAX_LIST_ITEMS, default=list)
    autonomy: Autonomy = "off"


@attrs.frozen
class MemoryItem:
    id: int
    role: str
    text: str
    tags: list[str]
    source: Source
    importance: int = described(**IMPORTANCE)
    created_at: datetime | None
    similarity: float = described("cosine similarity to ?query= (only when searching)", default=0.0)


@attrs.frozen
class NewMemory:
    """Unknown fields are refused (422). The same text (ignoring case and whitespace)
    twice for one role is 409."""

    text: str = described(maxLength=MAX_MEMORY_CHARS)
    tags: list[str] = described(
        maxItems=MAX_TAGS, items={"type": "string", "pattern": IDENTIFIER}, default=list
    )
    source: Source = "owner"
    importance: int = described(**IMPORTANCE, default=DEFAULT_IMPORTANCE)


@attrs.frozen
class MemoryQuery:
    query: str = described("nearest in meaning first", maxLength=MAX_QUESTION_CHARS, default="")
    tags: str = described("comma-separated: items with at least one of the tags", default="")
    limit: int = described(minimum=1, maximum=MAX_MEMORY_LIMIT, default=100)


@attrs.frozen
class Memory:
    role: str
    memory: list[MemoryItem]


@attrs.frozen
class ContextQuery:
    query: str = described("the question the context is for", maxLength=MAX_QUESTION_CHARS)


@attrs.frozen
class RoleContext:
    role: str
    query: str
    text: str = described("exactly the role context injected into the prompt")
    chars: int
    budget_chars: int
    dropped: int = described("items left out to keep within the budget")
    items: list[MemoryItem]


@attrs.frozen
class ProfileLearned(Profile):
    learned_by: Literal["llm", "extractive"] = described(
        "how the summary was made", default="extractive"
    )

    @classmethod
    def of(cls, profile: Profile, learned_by: str) -> ProfileLearned:
        return cls(**attrs.asdict(profile, recurse=False), learned_by=learned_by)


@attrs.frozen
class ProfilePatch:
    """The owner's fields to change (null or "" clears one); the learned ones are
    rebuilt by POST /profile/learn and refused here (422)."""

    description: str | None = described(maxLength=OWNER_FIELDS["description"], default="")
    products: str | None = described(maxLength=OWNER_FIELDS["products"], default="")
    tone: str | None = described(maxLength=OWNER_FIELDS["tone"], default="")
    language: str | None = described("ISO 639-1 code, or ''", default="")
