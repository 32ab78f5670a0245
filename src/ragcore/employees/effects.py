"""Effects of the AI employees: their role memory, and learning from answered questions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ragcore.effects import Effect

if TYPE_CHECKING:  # the pipelines that yield these effects define their results
    from ragcore.employees.learning import Interaction, LearningPolicy, Lesson


@attrs.frozen
class FindUnembeddedMemory(Effect["list[tuple[int, str]]"]):
    """The items of ``role`` without a vector in the active embedder's space (starter
    seeds, or items from before the space changed). Result: ``(id, text)`` pairs."""

    role: str


@attrs.frozen
class StoreMemoryVectors(Effect[None]):
    """Store each item's vector, given as ``(id, vector)`` pairs, in one transaction.
    Result: None."""

    vectors: tuple[tuple[int, tuple[float, ...]], ...]


@attrs.frozen
class FetchRoleMemory(Effect["list[MemoryItem]"]):
    """The role memory a role context is assembled from: every ``owner`` and ``profile``
    item of ``role`` (the business profile record among them, as ``profile`` items made
    by ``ragcore.employees.profile.profile_items``), and its ``learned_limit`` learned
    items nearest ``vector`` (the query's embedding), each with its ``similarity``.

    Result: ``MemoryItem``s, in any order.
    """

    role: str
    vector: tuple[float, ...]
    learned_limit: int


@attrs.frozen
class RecordInteraction(Effect["History"]):
    """Record an answered question for learning (``ragcore.employees.learning``, rule 1
    and 2), unless its asker is over ``policy.per_asker_daily`` today, and find the
    recorded questions of the last ``policy.window_days`` days nearest it (itself
    included, at least ``policy.similarity``), and whether a learned pattern is near it.
    Recorded questions older than the window are deleted, except those patterns came
    from. Result: ``History``.
    """

    interaction: Interaction
    policy: LearningPolicy


@attrs.frozen
class LearnPattern(Effect["MemoryItem | None"]):
    """Store ``lesson`` as a learned memory of ``role`` (nothing when the role holds the
    same text), mark the recorded question it came from, and keep the role's learned
    items to ``max_learned``, least important and oldest removed first. Result: the
    stored ``MemoryItem``, or None."""

    role: str
    lesson: Lesson
    max_learned: int
