"""The business profile: one record the owner writes (description, products, tone,
language) plus an auto-learned summary of current activity, fed into every role's
context as its business profile part.

``check_profile_patch`` checks a ``PATCH /profile`` body (owner fields only; the summary
is refused by name). ``learn_summary`` is the pipeline that rebuilds the summary from
``Activity`` (documents with their first lines, owner and learned role memories): one
``Generate`` when an LLM is configured, otherwise ``extractive_summary``, a
deterministic summary. ``profile_items`` turns the record into the role context's
business profile entries.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

import attrs

from ragcore.converter import refusal, sent, structure_body
from ragcore.employees.hours import EXAMPLE, HOURS, check_hours
from ragcore.employees.memory import MemoryItem
from ragcore.employees.zones import ZONES
from ragcore.errors import InvalidInput
from ragcore.generation import Generate, ModelReply, Prompt
from ragcore.inputs import SPACE
from ragcore.language import NAMES, language_name
from ragcore.metering import MeteredEffect, metered_generate
from ragcore.schema import described, whole
from ragcore.usage import Caps

#: the fields the owner writes, with their length limits in characters
OWNER_FIELDS: dict[str, int] = {
    "description": 600,
    "products": 600,
    "tone": 200,
    "language": 2,
    "name": 120,
    "opening_hours": 300,
    "timezone": 40,
}
NAME_MEANING = "the business's name, as customers know it (a person from <name> will reply)"
HOURS_MEANING = f"opening hours, like {EXAMPLE!r}; read in timezone"
ZONE_MEANING = "the time zone opening_hours are in (IANA, like Europe/Berlin), or ''"
#: the owner's free text fields' limits, in characters as sent (the others are checked)
LIMITS = {
    field: limit for field, limit in OWNER_FIELDS.items() if field not in ("language", "timezone")
}
READ_ONLY_FIELDS = ("learned_summary", "learned_at", "updated_at")
#: ``language`` as a pattern: a code of ``NAMES`` in any case, or none, spaces around it
LANGUAGE = (
    f"^[{SPACE}]*(?:"
    + "|".join("".join(f"[{c.upper()}{c}]" for c in code) for code in sorted(NAMES))
    + f")?[{SPACE}]*$"
)
MAX_SUMMARY_CHARS = 600
#: what the summary is built from, at most
MAX_DOCUMENTS = 12
MAX_MEMORIES = 12
MAX_FIRST_LINE_CHARS = 160
SUMMARY_OUTPUT_TOKENS = 300
SUMMARY_TEMPERATURE = 0.2
PROFILE_TAG = "business-profile"


@attrs.frozen
class Profile:
    """The business profile; empty fields when never set."""

    description: Annotated[str, described(maxLength=OWNER_FIELDS["description"])] = ""
    products: Annotated[str, described(maxLength=OWNER_FIELDS["products"])] = ""
    tone: Annotated[str, described(maxLength=OWNER_FIELDS["tone"])] = ""
    language: Annotated[str, described("ISO 639-1 code, or ''")] = ""
    name: Annotated[str, described(NAME_MEANING, maxLength=OWNER_FIELDS["name"])] = ""
    opening_hours: Annotated[str, described(HOURS_MEANING, maxLength=300)] = ""
    timezone: Annotated[str, described(ZONE_MEANING)] = ""
    learned_summary: Annotated[str, described(readOnly=True)] = ""
    learned_at: Annotated[datetime | None, described(readOnly=True)] = None
    updated_at: Annotated[datetime | None, described(readOnly=True)] = None


def _owner_field(field: str) -> Any:
    """A field of ProfilePatch: None when not sent; text sent is tidied and checked."""

    def check(value: str) -> str:
        if len(value) > LIMITS.get(field, len(value)):
            raise InvalidInput(
                field, f"{field} has {len(value)} characters; the limit is {OWNER_FIELDS[field]}"
            )
        if field == "opening_hours":
            return check_hours(value)
        if field == "timezone":  # exactly a name of the database, as the schema lists them
            if value and value not in ZONES:
                raise InvalidInput(
                    "timezone",
                    f"timezone {value[:60]!r} is not a time zone name like Europe/Berlin",
                )
            return value
        value = " ".join(value.split()) if field != "description" else value.strip()
        if field == "language":
            if not value.isascii() or (value and value.lower() not in NAMES):
                raise InvalidInput(
                    "language",
                    f"language {value!r} is not an ISO 639-1 code we know, like en, de or fr",
                )
            value = value.lower()
        return value

    refused = refusal(f"{field} must be text (or null to clear it)")
    return attrs.field(default=None, converter=sent(check), metadata=refused)


@whole(minProperties=1)
@attrs.frozen
class ProfilePatch:
    """The owner's fields to change (null or "" clears one); the learned ones are
    rebuilt by POST /profile/learn and refused here (422)."""

    description: Annotated[str | None, described(maxLength=OWNER_FIELDS["description"])] = (
        _owner_field("description")
    )
    products: Annotated[str | None, described(maxLength=OWNER_FIELDS["products"])] = _owner_field(
        "products"
    )
    tone: Annotated[str | None, described(maxLength=OWNER_FIELDS["tone"])] = _owner_field("tone")
    language: Annotated[str | None, described("ISO 639-1 code, or ''", pattern=LANGUAGE)] = (
        _owner_field("language")
    )
    name: Annotated[str | None, described(NAME_MEANING, maxLength=OWNER_FIELDS["name"])] = (
        _owner_field("name")
    )
    opening_hours: Annotated[str | None, described(HOURS_MEANING, maxLength=300, pattern=HOURS)] = (
        _owner_field("opening_hours")
    )
    timezone: Annotated[str | None, described(ZONE_MEANING, enum=["", *ZONES])] = _owner_field(
        "timezone"
    )

    def given(self) -> dict[str, str]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


def check_profile_patch(body: Mapping[str, Any]) -> dict[str, str]:
    """The body checked: owner fields only, each text within its limit (null or "" clears
    it); ``language`` an ISO 639-1 code. The summary and other fields are refused by name."""
    read_only = sorted(set(body) & set(READ_ONLY_FIELDS))
    if read_only:
        raise InvalidInput(
            ", ".join(read_only),
            f"{', '.join(read_only)} cannot be written: the summary is rebuilt by "
            "POST /profile/learn; the owner fields: " + ", ".join(OWNER_FIELDS),
        )
    cleared = {field: "" if value is None else value for field, value in body.items()}
    fields = structure_body(cleared, ProfilePatch).given()
    if not fields:
        raise InvalidInput("body", f"send at least one of: {', '.join(OWNER_FIELDS)}")
    return fields


def profile_lines(profile: Profile) -> list[str]:
    """The profile as the lines of the role context's business profile part."""
    lines = []
    if profile.description:
        lines.append(f"About the business: {' '.join(profile.description.split())}")
    if profile.products:
        lines.append(f"Products and services: {profile.products}")
    if profile.tone:
        lines.append(f"Tone: {profile.tone}")
    if profile.language:
        lines.append(f"Language: {language_name(profile.language)} ({profile.language})")
    if profile.learned_summary:
        lines.append(f"Recent activity: {' '.join(profile.learned_summary.split())}")
    return lines


def profile_items(role: str, profile: Profile | None) -> list[MemoryItem]:
    """The profile as ``profile`` memory items of ``role`` (importance 5, negative ids in
    line order, no creation time), one per line of ``profile_lines``."""
    if profile is None:
        return []
    lines = profile_lines(profile)
    return [
        MemoryItem(
            id=position - len(lines),
            role=role,
            text=line,
            tags=(PROFILE_TAG,),
            source="profile",
            importance=5,
            created_at=None,
        )
        for position, line in enumerate(lines)
    ]


@attrs.frozen
class ActivityDocument:
    name: str
    first_line: str


@attrs.frozen
class Activity:
    """What the summary is learned from: documents (newest first) and owner and learned
    role memory texts (most important first)."""

    documents: tuple[ActivityDocument, ...] = ()
    memories: tuple[str, ...] = ()


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, without Markdown heading marks, clipped."""
    for line in text.splitlines():
        line = " ".join(line.strip().lstrip("#").split())
        if line:
            return _clip(line, MAX_FIRST_LINE_CHARS)
    return ""


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut.rstrip(" ,;:") + "…"


def extractive_summary(activity: Activity) -> str:
    """A deterministic summary of ``activity``: the documents by name with their first
    lines, then the first memories, within ``MAX_SUMMARY_CHARS``."""
    parts: list[str] = []
    documents = activity.documents[:MAX_DOCUMENTS]
    if documents:
        listed = "; ".join(
            f"{d.name} ({d.first_line})" if d.first_line else d.name for d in documents
        )
        parts.append(f"Documents ({len(activity.documents)}): {listed}.")
    memories = [" ".join(m.split()) for m in activity.memories[:MAX_MEMORIES] if m.strip()]
    if memories:
        parts.append("Noted: " + " ".join(m if m.endswith(".") else m + "." for m in memories))
    if not parts:
        return ""
    return _clip(" ".join(parts), MAX_SUMMARY_CHARS)


SUMMARY_SYSTEM = (
    "You write the business profile summary for a small business's AI employees. "
    "In at most four sentences, say what the business does and offers and what its "
    "documents and notes are about, using only the facts given. Plain text, no lists."
)


def summary_prompt(activity: Activity, profile: Profile) -> Prompt:
    lines = []
    if profile.description:
        lines.append(f"Owner's description: {profile.description}")
    if profile.products:
        lines.append(f"Products: {profile.products}")
    for d in activity.documents[:MAX_DOCUMENTS]:
        lines.append(f"Document: {d.name}: {d.first_line}")
    for m in activity.memories[:MAX_MEMORIES]:
        lines.append(f"Note: {m}")
    user = "Facts:\n" + ("\n".join(lines) or "(none)") + "\n\nWrite the summary."
    return Prompt(
        system=SUMMARY_SYSTEM,
        user=user,
        question="Summarise the business",
        sources=(),
        language=profile.language or "en",
    )


LearnedBy = Literal["llm", "extractive"]


def learn_summary(
    activity: Activity,
    profile: Profile,
    use_llm: bool,
    caps: Caps = Caps(),
    ledger: bool = False,
) -> Generator[MeteredEffect, Any, tuple[str, LearnedBy]]:
    """The new summary and how it was made (``"llm"`` or ``"extractive"``): through one
    ``Generate``, metered like every model call (rule 14), when ``use_llm``; by
    ``extractive_summary`` when the model fails, answers nothing or a cap is reached."""
    if use_llm and (activity.documents or activity.memories):
        request = Generate(
            summary_prompt(activity, profile),
            max_output_tokens=SUMMARY_OUTPUT_TOKENS,
            temperature=SUMMARY_TEMPERATURE,
            task="summary",
        )
        try:
            reply = yield from metered_generate(request, None, caps, ledger)
        except Exception:  # noqa: BLE001 (any provider failure: summarise offline)
            reply = None
        text = " ".join(reply.text.split()) if isinstance(reply, ModelReply) else ""
        if text:
            return _clip(text, MAX_SUMMARY_CHARS), "llm"
    return extractive_summary(activity), "extractive"
