"""The settings the handoff rules obey."""

from __future__ import annotations

import attrs

from ragcore.settings import Settings


@attrs.frozen
class HandoffPolicy:
    """``after_refusals``: grounded refusals in a row that hand a conversation to a
    person (0: never); ``idle_minutes``: a conversation with a person nobody wrote in for
    this long goes back to the AI; ``transfer``: a call handed off is put through to
    VOICE_TRANSFER_NUMBER (else the caller leaves a message)."""

    after_refusals: int = 2
    idle_minutes: int = 60
    transfer: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> HandoffPolicy:
        return cls(
            settings.handoff_after_refusals,
            settings.handoff_idle_minutes,
            bool(settings.voice_transfer_number),
        )
