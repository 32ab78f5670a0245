"""The last call this process made to each provider, and how it ended, for GET /status.

Kept in the process, as the counters of ``ragio.metrics`` are: how a provider failed is
recorded nowhere else (the usage ledger keeps settled calls only, a failed turn names no
provider, the metrics count failures without a time). So with several replicas, /status
shows the calls of the replica that answers it, and a restart starts with none. Each
call is stamped with the monotonic clock; ``seen`` gives its time by the service's wall
clock (``ragio.clock``), the one every wall-clock read goes through.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import attrs

from ragcore.api.status import ProviderCall
from ragcore.chat.fallback import Attempt

EMBEDDING = "embedding"  # the task of an embedding call; the others answer (answer, check…)


@attrs.frozen
class LastCall:
    provider: str
    task: str
    ended: float  # time.monotonic()
    failed: Attempt | None


class LastCalls:
    """The last call to each provider, by use: ``answering`` or ``embedding`` (a provider
    may do both, with different models)."""

    def __init__(self) -> None:
        self._calls: dict[tuple[str, str], LastCall] = {}

    def record(self, provider: str, task: str, failed: Attempt | None = None) -> None:
        """A call that ended now: answered (``failed`` None), or failed as ``failed`` says."""
        use = "embedding" if task == EMBEDDING else "answering"
        self._calls[use, provider] = LastCall(provider, task, time.monotonic(), failed)

    def seen(self, now: datetime) -> dict[tuple[str, str], ProviderCall]:
        """Each last call by ``(use, provider)``, at its time by a clock that reads ``now``."""
        current = time.monotonic()
        return {
            key: ProviderCall.of(
                call.provider, call.task, now - timedelta(seconds=current - call.ended), call.failed
            )
            for key, call in self._calls.items()
        }

    def clear(self) -> None:
        self._calls.clear()


#: this process's
LAST_CALLS = LastCalls()
