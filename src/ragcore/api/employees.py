"""/employees, /employees/{role}/memory and /employees/{role}/context, and /profile."""

from __future__ import annotations

import typing
from datetime import datetime
from typing import Annotated, Literal

import attrs

from ragcore.chat.pipeline import MAX_QUESTION_CHARS
from ragcore.converter import unless_sent
from ragcore.employees import memory
from ragcore.employees.editing import MAX_DISPLAY_NAME_CHARS, MAX_PERSONALITY_CHARS
from ragcore.employees.editing import EmployeePatch as EmployeePatch  # the body, beside its rules
from ragcore.employees.memory import MAX_IMPORTANCE, MIN_IMPORTANCE, TAGS_QUERY, MemorySource
from ragcore.employees.memory import NewMemory as NewMemory  # the body, beside its rules
from ragcore.employees.profile import LearnedBy, Profile
from ragcore.employees.profile import ProfilePatch as ProfilePatch  # the body, by its rules
from ragcore.employees.roles import _IDENTIFIER, IDENTIFIER_RULE, Autonomy, Role
from ragcore.employees.sensitivity import Sensitivity, effective_autonomy
from ragcore.errors import InvalidInput
from ragcore.schema import described, text

IDENTIFIER = _IDENTIFIER.pattern
#: the schema of {role} in a path (``check_role_identifier``)
ROLE_PATH = {"role": {"type": "string", "pattern": IDENTIFIER, "description": IDENTIFIER_RULE}}
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

    @classmethod
    def of(
        cls,
        role: Role,
        sensitivity: Sensitivity,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
    ) -> Employee:
        """The role as the API shows it: whether it is sensitive and why (rule 13), and
        the autonomy it acts with next to the one configured."""
        shown = SensitivityShown(
            sensitivity.reason,  # type: ignore[arg-type]
            sensitivity.marker,
            sensitivity.field,
            sensitivity.setting,
            sensitivity.explain(),
        )
        return cls(
            role.identifier,
            role.display_name,
            role.personality,
            list(role.channels),
            list(role.skill_tags),
            role.autonomy,
            effective_autonomy(role.autonomy, sensitivity),
            role.built_in,
            sensitivity.sensitive,
            shown,
            created_at,
            updated_at,
        )


@attrs.frozen
class Employees:
    employees: Annotated[list[Employee], described("the roles, built-in first")]


@attrs.frozen
class MemoryItem:
    id: int
    role: str
    text: str
    tags: list[str]
    source: MemorySource
    importance: Annotated[int, described(**IMPORTANCE)]
    created_at: datetime | None
    similarity: Annotated[
        float | None, described("cosine similarity to ?query= (only when searching)")
    ] = unless_sent()

    @classmethod
    def of(cls, item: memory.MemoryItem) -> MemoryItem:
        similarity = None if item.similarity is None else round(item.similarity, 4)
        return cls(
            item.id,
            item.role,
            item.text,
            list(item.tags),
            item.source,
            item.importance,
            item.created_at,
            similarity,
        )


@attrs.frozen
class MemoryQuery:
    query: Annotated[str, described("nearest in meaning first", maxLength=MAX_QUESTION_CHARS)] = ""
    tags: Annotated[
        str,
        described(
            "tags separated by commas: items with at least one of the tags", pattern=TAGS_QUERY
        ),
    ] = ""
    limit: Annotated[int, described(minimum=1, maximum=MAX_MEMORY_LIMIT)] = 100


@attrs.frozen
class Memory:
    role: str
    memory: list[MemoryItem]


@attrs.frozen
class ContextQuery:
    query: Annotated[str, text(MAX_QUESTION_CHARS, "the question the context is for")]


@attrs.frozen
class RoleContext:
    role: str
    query: str
    text: Annotated[str, described("exactly the role context injected into the prompt")]
    chars: int
    budget_chars: int
    dropped: Annotated[int, described("items left out to keep within the budget")]
    items: list[MemoryItem]

    @classmethod
    def of(cls, role: str, query: str, context: memory.RoleContext) -> RoleContext:
        return cls(
            role,
            query,
            context.text,
            len(context.text),
            context.budget_chars,
            context.dropped,
            [MemoryItem.of(item) for item in context.items],
        )


@attrs.frozen
class ProfileLearned(Profile):
    learned_by: Annotated[Literal["llm", "extractive"], described("how the summary was made")] = (
        "extractive"
    )

    @classmethod
    def of(cls, profile: Profile, learned_by: LearnedBy) -> ProfileLearned:
        return cls(**attrs.asdict(profile, recurse=False), learned_by=learned_by)


@typing.overload
def check_query(raw: str | None, *, required: typing.Literal[True]) -> str: ...
@typing.overload
def check_query(raw: str | None, *, required: bool) -> str | None: ...
def check_query(raw: str | None, *, required: bool) -> str | None:
    """``?query=`` of MemoryQuery and ContextQuery, stripped: what the memory is searched
    by, or the context is for; None when blank and not ``required``."""
    query = (raw or "").strip()
    if not query:
        if required:
            raise InvalidInput("query", "send the question as ?query=…")
        return None
    if len(raw or "") > MAX_QUESTION_CHARS:
        detail = f"query has {len(raw or '')} characters; the limit is {MAX_QUESTION_CHARS}"
        raise InvalidInput("query", detail)
    return query
