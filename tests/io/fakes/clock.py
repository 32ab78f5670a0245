"""A clock that moves only when a test moves it (``service.clock``, see ragio.clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs


@attrs.define
class FakeClock:
    at: datetime = attrs.field(factory=lambda: datetime.now(UTC))

    def now(self) -> datetime:
        return self.at

    def advance(self, by: timedelta) -> None:
        self.at += by
