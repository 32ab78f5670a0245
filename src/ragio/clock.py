"""The service's one wall clock.

Every wall-clock read in ragio and voiceio goes through ``Service.clock`` (ragcore never
reads one: time is passed in), so a test moves time by swapping in a fake clock instead
of patching modules. Monotonic timers for timeouts and pacing (``trio.current_time``)
are not wall-clock time and do not go through it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware in UTC."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)
