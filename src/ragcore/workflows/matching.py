"""Which workflows fire after a reply (SPEC section 6 rule 1): the active ones whose
channels include the channel that handled the message. A channel that is not wired
(voice, the HTTP API) fires none, whatever is stored."""

from __future__ import annotations

from collections.abc import Iterable

from ragcore.workflows.definitions import WIRED_CHANNELS, Workflow


def firing(workflows: Iterable[Workflow], channel: str) -> list[Workflow]:
    """The workflows to call for a reply sent on ``channel``, in the order given."""
    if channel not in WIRED_CHANNELS:
        return []
    return [w for w in workflows if w.is_active and channel in w.channels]
