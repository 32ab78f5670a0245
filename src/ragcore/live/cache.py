"""The 5-minute cache of live results (SPEC rule 9: "queried live with a 5-minute cache").

The cache is a plain dict the caller holds (one per running service); these functions
are its only rules, with ``now`` passed in, so tests move time by hand. A read result is
kept for 5 minutes under its action and the values it was run with: the customer who
asks twice in a minute does not query the owner's database twice. A write is never
kept, and it clears what the cache holds for its action, and for the other actions on
the same data source: the rows it changed may be in them, and a customer who just
cancelled an order must not be told, from the cache, that it is still open.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from ragcore.live.matching import LiveAction

TTL = timedelta(minutes=5)
MAX_ENTRIES = 1000  # beyond it the oldest go first: the dict stays small

#: action id and the bound values, sorted by name
CacheKey = tuple[int, tuple[tuple[str, str], ...]]
Rows = tuple[Mapping[str, Any], ...]


@attrs.frozen
class Entry:
    rows: Rows
    source_id: int
    stored_at: datetime


Cache = MutableMapping[CacheKey, Entry]

#: the enabled actions are read again after this long, so an edit made through another
#: process of the service is seen within it (one made here is seen at once: ``changed``)
ACTIONS_TTL = timedelta(seconds=30)


@attrs.define
class Held:
    """What one running service holds for live data: the results cache, and the enabled
    actions with when they were read (None: to be read)."""

    results: dict[CacheKey, Entry] = attrs.field(factory=dict)
    actions: tuple[LiveAction, ...] | None = None
    read_at: datetime | None = None

    def current_actions(self, now: datetime) -> tuple[LiveAction, ...] | None:
        """The actions, or None when they must be read again."""
        if self.actions is None or self.read_at is None or now - self.read_at >= ACTIONS_TTL:
            return None
        return self.actions

    def read(self, actions: tuple[LiveAction, ...], now: datetime) -> None:
        self.actions, self.read_at = actions, now

    def changed(self, *, action_id: int | None = None, source_id: int | None = None) -> None:
        """An action or a data source was edited or deleted: its cached results go, and
        the actions are read again."""
        forget(self.results, action_id=action_id, source_id=source_id)
        self.actions = None


def cache_key(action_id: int, values: Mapping[str, str]) -> CacheKey:
    return action_id, tuple(sorted(values.items()))


def fresh(entry: Entry, now: datetime) -> bool:
    """Fresh for 5 minutes from when it was stored (at 5 minutes it is expired)."""
    return now - entry.stored_at < TTL


def drop_expired(cache: Cache, now: datetime) -> None:
    for key in [key for key, entry in cache.items() if not fresh(entry, now)]:
        del cache[key]


def cached_rows(cache: Cache, key: CacheKey, now: datetime) -> Rows | None:
    """The rows stored under ``key`` while fresh; None otherwise (expired ones dropped)."""
    drop_expired(cache, now)
    entry = cache.get(key)
    return entry.rows if entry is not None else None


def record(
    cache: Cache, key: CacheKey, source_id: int, rows: Rows, *, writes: bool, now: datetime
) -> None:
    """What a query's result does to the cache: a read is kept under ``key``; a write is
    not, and clears its action's entries and those of its data source."""
    drop_expired(cache, now)
    if writes:
        forget(cache, action_id=key[0], source_id=source_id)
        return
    cache[key] = Entry(tuple(rows), source_id, now)
    while len(cache) > MAX_ENTRIES:
        oldest = min(cache, key=lambda k: cache[k].stored_at)
        del cache[oldest]


def forget(cache: Cache, *, action_id: int | None = None, source_id: int | None = None) -> None:
    """Drop every entry of ``action_id`` and of ``source_id``: after a write, and when the
    owner edits or deletes an action or a data source (its old results must not outlive
    it)."""
    for key in [
        key
        for key, entry in cache.items()
        if key[0] == action_id or (source_id is not None and entry.source_id == source_id)
    ]:
        del cache[key]
