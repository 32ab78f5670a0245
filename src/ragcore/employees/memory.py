"""Role memory (rule 4): what a role remembers, how a duplicate is recognised, and the
role context it injects into a prompt.

A memory item has a source: ``owner`` (an instruction from the owner; the built-in
roles' starter seeds are these), ``profile`` (an entry of the business profile) or
``learned`` (a pattern learned from past conversations). Two items of one role are the
same when their texts are equal once normalised (``normalise_text``): the hash of the
whole normalised text (``content_hash``) is unique per role in the database.

The role context for a question (``assemble_context``) is, in this order: every owner
instruction (most important first, then oldest first), every business profile entry (in
the same order), then the learned patterns most relevant to the question (most similar
first). It is held to ``CONTEXT_BUDGET_CHARS`` characters of rendered text: the items
are kept in that priority order while the text fits, and the first that does not fit is
dropped with every item after it, so the lowest priority goes first.

``role_context`` is the one pipeline that fetches and assembles it, used by
``GET /employees/{role}/context`` and by the chat pipeline alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias

import attrs

from ragcore.converter import listing, refusal, structure_body
from ragcore.effects import Effect
from ragcore.employees.roles import _IDENTIFIER, IDENTIFIER_RULE, check_role_identifier
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import SPACE
from ragcore.knowledge.effects import Embed
from ragcore.schema import described
from ragcore.schema import text as text_schema

MemorySource = Literal["owner", "profile", "learned"]
SOURCES: tuple[MemorySource, ...] = ("owner", "profile", "learned")
SOURCE_TITLES = {
    "owner": "Owner instructions",
    "profile": "Business profile",
    "learned": "Learned patterns",
}
MAX_MEMORY_CHARS = 1000
MAX_TAGS = 16
MIN_IMPORTANCE = 1
MAX_IMPORTANCE = 5
DEFAULT_IMPORTANCE = 3
IMPORTANCE_REFUSAL = f"must be a whole number from {MIN_IMPORTANCE} to {MAX_IMPORTANCE}"
TAGS_REFUSAL = "must be a list of tags"
_TAG = _IDENTIFIER.pattern.removeprefix("^").removesuffix("$")
_BLANK = f"[{SPACE}]*"
#: ``?tags=`` as a pattern: what ``parse_tags`` takes (tags between commas, blanks around
#: them and blank items ignored, at most MAX_TAGS items)
TAGS_QUERY = f"^{_BLANK}(?:{_TAG}{_BLANK})?(?:,{_BLANK}(?:{_TAG}{_BLANK})?){{0,{MAX_TAGS - 1}}}$"
#: the size of the role context, in characters of the text injected into the prompt
CONTEXT_BUDGET_CHARS = 2000
#: how many learned patterns, most relevant first, are considered for the context
LEARNED_CANDIDATES = 8


def normalise_text(text: str) -> str:
    """The text as duplicates are compared: case folded, runs of whitespace made one
    space, and stripped."""
    return " ".join(text.casefold().split())


def content_hash(text: str) -> str:
    """SHA-256 (hex) of the whole normalised text: the role memory's duplicate key."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def check_tags(value: Any) -> tuple[str, ...]:
    """Tags: a list of identifiers (lowercase letters, digits, _ and -), without repeats."""
    if not isinstance(value, list | tuple):
        raise InvalidInput("tags", TAGS_REFUSAL)
    if len(value) > MAX_TAGS:
        raise InvalidInput("tags", f"has {len(value)} items; the limit is {MAX_TAGS}")
    out: list[str] = []
    for item in value:
        try:
            check_role_identifier(item)
        except InvalidInput:
            raise InvalidInput(
                "tags", f"{item!r} is not allowed: each tag: {IDENTIFIER_RULE}"
            ) from None
        if item not in out:
            out.append(item)
    return tuple(out)


def _memory_text(value: Any) -> str:
    return check_text(value, "text", MAX_MEMORY_CHARS)


def _importance(_: Any, __: Any, value: int) -> None:
    if not MIN_IMPORTANCE <= value <= MAX_IMPORTANCE:
        raise InvalidInput("importance", IMPORTANCE_REFUSAL)


@listing()
@attrs.frozen
class NewMemory:
    """Unknown fields are refused (422). The same text (ignoring case and whitespace)
    twice for one role is 409."""

    text: Annotated[str, text_schema(MAX_MEMORY_CHARS)] = attrs.field(
        converter=_memory_text, metadata=refusal("is required, as text")
    )
    tags: Annotated[
        tuple[Any, ...],
        described(maxItems=MAX_TAGS, items={"type": "string", "pattern": _IDENTIFIER.pattern}),
    ] = attrs.field(default=(), converter=check_tags, metadata=refusal(TAGS_REFUSAL))
    source: MemorySource = attrs.field(
        default="owner", metadata=refusal(f"must be one of: {', '.join(SOURCES)}")
    )
    importance: Annotated[int, described(minimum=MIN_IMPORTANCE, maximum=MAX_IMPORTANCE)] = (
        attrs.field(
            default=DEFAULT_IMPORTANCE, validator=_importance, metadata=refusal(IMPORTANCE_REFUSAL)
        )
    )

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


@attrs.frozen
class MemoryItem:
    """A stored memory item; ``similarity`` (cosine, -1..1) when found by a query."""

    id: int
    role: str
    text: str
    tags: tuple[str, ...]
    source: MemorySource
    importance: int
    created_at: datetime | None = None
    similarity: float | None = None


# The effects of role memory: embedding the items without a vector, and fetching them.


@attrs.frozen
class FindUnembeddedMemory(Effect[list[tuple[int, str]]]):
    """The items of ``role`` without a vector in the active embedder's space (starter
    seeds, or items from before the space changed). Result: ``(id, text)`` pairs."""

    runs_ahead = True

    role: str


@attrs.frozen
class StoreMemoryVectors(Effect[None]):
    """Store each item's vector, given as ``(id, vector)`` pairs, in one transaction.
    Result: None. It runs ahead of a tentative turn: the vectors of items that exist are
    a cache, which changes no item."""

    runs_ahead = True

    vectors: tuple[tuple[int, tuple[float, ...]], ...]


@attrs.frozen
class FetchRoleMemory(Effect[list[MemoryItem]]):
    """The role memory a role context is assembled from: every ``owner`` and ``profile``
    item of ``role`` (the business profile record among them, as ``profile`` items made
    by ``ragcore.employees.profile.profile_items``), and its ``learned_limit`` learned
    items nearest ``vector`` (the query's embedding), each with its ``similarity``.

    Result: ``MemoryItem``s, in any order.
    """

    runs_ahead = True

    role: str
    vector: tuple[float, ...]
    learned_limit: int


@attrs.frozen
class FindDuplicateMemory(Effect[int | None]):
    """The id of ``role``'s item whose normalised text hashes to ``digest``, if any."""

    role: str
    digest: str


@attrs.frozen
class AddMemory(Effect["MemoryItem | None"]):
    """Store ``memory`` for ``role`` with its ``vector``. Result: the stored item, or None
    when the role already holds the same normalised text (stored meanwhile)."""

    role: str
    memory: NewMemory
    vector: tuple[float, ...]


class AlreadyRemembered(Exception):
    """The role already holds this text (the same once normalised): item ``existing_id``."""

    def __init__(self, role: str, existing_id: int | None):
        super().__init__(
            f"role {role!r} already remembers this text (memory item {existing_id}); "
            "texts that differ only in case or spacing are the same"
        )
        self.existing_id = existing_id


#: what remembering a new item asks for
RememberEffect: TypeAlias = FindDuplicateMemory | Embed | AddMemory


def remember(role: str, new: NewMemory) -> Generator[RememberEffect, Any, MemoryItem]:
    """Add ``new`` to ``role``'s memory, embedded; AlreadyRemembered when the role holds
    the same text, found before embedding or, when another request stored it meanwhile,
    on inserting (nothing is stored twice: the hash is unique per role)."""
    duplicate = yield FindDuplicateMemory(role, new.content_hash)
    if duplicate is None:
        [vector] = yield Embed((new.text,), "document")
        item: MemoryItem | None = yield AddMemory(role, new, tuple(vector))
        if item is not None:
            return item
        duplicate = yield FindDuplicateMemory(role, new.content_hash)
    raise AlreadyRemembered(role, duplicate)


def check_memory(body: Mapping[str, Any]) -> NewMemory:
    """The body checked: known fields only (others are refused by name), ``text`` required."""
    return structure_body(body, NewMemory)


def parse_tags(value: str | None) -> tuple[str, ...]:
    """``?tags=a, b`` as a tuple of tags: identifiers separated by commas (blanks around
    them and blank items ignored), at most ``MAX_TAGS`` items (``TAGS_QUERY``, as a
    pattern)."""
    if not value:
        return ()
    items = value.split(",")
    if len(items) > MAX_TAGS:
        raise InvalidInput("tags", f"has {len(items)} items; the limit is {MAX_TAGS}")
    return check_tags([item.strip() for item in items if item.strip()])


def seed_memories(seeds: Sequence[str]) -> list[NewMemory]:
    """A built-in role's starter memory seeds as owner instructions."""
    return [NewMemory(text=" ".join(seed.split()), source="owner") for seed in seeds]


@attrs.frozen
class RoleContext:
    """The role context: the exact text injected into a prompt and the items it holds."""

    text: str
    items: tuple[MemoryItem, ...]
    budget_chars: int
    dropped: int = 0  # items that did not fit the budget


def _priority(items: Sequence[MemoryItem]) -> list[MemoryItem]:
    def fixed(source: str) -> list[MemoryItem]:
        chosen = [item for item in items if item.source == source]
        return sorted(
            chosen,
            key=lambda i: (-i.importance, i.created_at is None, i.created_at or 0, i.id),
        )

    learned = sorted(
        (item for item in items if item.source == "learned"),
        key=lambda i: (-(i.similarity if i.similarity is not None else -2.0), -i.importance, i.id),
    )
    return fixed("owner") + fixed("profile") + learned


def render_context(items: Sequence[MemoryItem]) -> str:
    """The context text: one titled section per source, one item a line."""
    sections = []
    for source in SOURCES:
        lines = [f"- {item.text}" for item in items if item.source == source]
        if lines:
            sections.append(f"{SOURCE_TITLES[source]}:\n" + "\n".join(lines))
    return "\n\n".join(sections)


def assemble_context(
    items: Sequence[MemoryItem], budget_chars: int = CONTEXT_BUDGET_CHARS
) -> RoleContext:
    """The role context of ``items`` (see the module): in priority order, as many as fit
    ``budget_chars`` of rendered text; the lowest priority is dropped first."""
    ordered = _priority(items)
    kept: list[MemoryItem] = []
    text = ""
    for item in ordered:
        candidate = render_context([*kept, item])
        if len(candidate) > budget_chars:
            break
        kept.append(item)
        text = candidate
    return RoleContext(text, tuple(kept), budget_chars, dropped=len(ordered) - len(kept))


#: what embedding a role's unembedded items asks for
EmbedMissingEffect: TypeAlias = FindUnembeddedMemory | Embed | StoreMemoryVectors
#: what fetching a role context asks for
RoleContextEffect: TypeAlias = EmbedMissingEffect | FetchRoleMemory


def embed_missing(role: str) -> Generator[EmbedMissingEffect, Any, None]:
    """Embed the items of ``role`` that have no vector in the active embedder's space
    (starter seeds, items from before the space changed), so a search by meaning finds
    them."""
    missing: Sequence[tuple[int, str]] = yield FindUnembeddedMemory(role)
    if not missing:
        return
    vectors = yield Embed(tuple(text for _, text in missing), purpose="document")
    pairs = zip((item_id for item_id, _ in missing), vectors, strict=True)
    yield StoreMemoryVectors(tuple((item_id, tuple(vector)) for item_id, vector in pairs))


def role_context(
    role: str,
    query: str,
    vector: Sequence[float] | None = None,
    budget_chars: int = CONTEXT_BUDGET_CHARS,
) -> Generator[RoleContextEffect, Any, RoleContext]:
    """Fetch and assemble the role context of ``role`` for ``query`` (embedded here unless
    its ``vector`` is given): owner and profile items, and the learned ones nearest it."""
    yield from embed_missing(role)
    if vector is None:
        [vector] = yield Embed((query,), purpose="query")
    items: Sequence[MemoryItem] = yield FetchRoleMemory(
        role, tuple(vector), learned_limit=LEARNED_CANDIDATES
    )
    return assemble_context(items, budget_chars)
