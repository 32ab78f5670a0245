"""The last call this process made to each provider, and how it ended, for GET /status.

Kept in the process, as the counters of ``ragio.metrics`` are: how a provider failed is
recorded nowhere else (the usage ledger keeps settled calls only, a failed turn names no
provider, the metrics count failures without a time). So with several replicas, /status
shows the calls of the replica that answers it, and a restart starts with none. The
processes of one ``ragchat serve`` share theirs, though: with ``PROMETHEUS_MULTIPROC_DIR``
set (``ragio.metrics.MULTIPROCESS``) each process also writes its last calls to a file
of its own in that folder (a new file put in place of the old, so a reader never sees
half of one), and ``seen`` merges them all, the newest call of each provider winning.
The file is rewritten when what it says changes (a provider's first call, another task
or outcome) and otherwise at most once every ``SHARE_EVERY_SECONDS``: a call only later
than the one before changes no state, and a new file at every call would cost more than
the rest of the call's bookkeeping (``scripts/bench_metrics.py``); so another process
may show a provider's last call up to that much earlier than it was. The supervisor
removes a process's file once it has ended (``ragio.metrics.process_ended``). Each call
is stamped with the monotonic clock (the machine's, the same in all its processes);
``seen`` gives its time by the service's wall clock (``ragio.clock``), the one every
wall-clock read goes through.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import attrs

from ragcore.api.status import ProviderCall
from ragcore.chat.fallback import Attempt, FailureKind
from ragio.metrics import LAST_CALLS_FILE, MULTIPROCESS

log = logging.getLogger(__name__)

EMBEDDING = "embedding"  # the task of an embedding call; the others answer (answer, check…)
#: how long a call only later than the one shared before may wait to be shared
SHARE_EVERY_SECONDS = 1.0


@attrs.frozen
class LastCall:
    provider: str
    task: str
    ended: float  # time.monotonic()
    failed: Attempt | None


class LastCalls:
    """The last call to each provider, by use: ``answering`` or ``embedding`` (a provider
    may do both, with different models); shared through ``folder`` when there is one."""

    def __init__(self, folder: Path | None = None) -> None:
        self._calls: dict[tuple[str, str], LastCall] = {}
        self._folder = folder
        self._shared: dict[tuple[str, str], LastCall] = {}  # what the file says
        self._unwritable = False  # said once in the log, not at every call

    def record(self, provider: str, task: str, failed: Attempt | None = None) -> None:
        """A call that ended now: answered (``failed`` None), or failed as ``failed`` says."""
        use = "embedding" if task == EMBEDDING else "answering"
        call = self._calls[use, provider] = LastCall(provider, task, time.monotonic(), failed)
        if self._folder is not None:
            shared = self._shared.get((use, provider))
            if (
                shared is None
                or (shared.task, shared.failed) != (task, failed)
                or call.ended - shared.ended >= SHARE_EVERY_SECONDS
            ):
                self._write(self._folder)

    def seen(self, now: datetime) -> dict[tuple[str, str], ProviderCall]:
        """Each last call by ``(use, provider)``, at its time by a clock that reads ``now``:
        this process's, and the other processes' sharing the folder."""
        calls = self._calls if self._folder is None else self._merged(self._folder)
        current = time.monotonic()
        return {
            key: ProviderCall.of(
                call.provider, call.task, now - timedelta(seconds=current - call.ended), call.failed
            )
            for key, call in calls.items()
        }

    def clear(self) -> None:
        self._calls.clear()
        self._shared.clear()
        if self._folder is not None:
            (self._folder / LAST_CALLS_FILE.format(pid=os.getpid())).unlink(missing_ok=True)

    def _write(self, folder: Path) -> None:
        """This process's calls to its file, in place of the one before (``os.replace``)."""
        name = LAST_CALLS_FILE.format(pid=os.getpid())
        shared = [
            [use, call.provider, call.task, call.ended, _attempt(call.failed)]
            for (use, _), call in self._calls.items()
        ]
        new = folder / f".{name}.new"
        try:  # os.open and os.write: a Python file object costs as much again
            fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, json.dumps(shared).encode())
            finally:
                os.close(fd)
            os.replace(new, folder / name)
            self._shared = dict(self._calls)
        except OSError as error:
            if not self._unwritable:
                self._unwritable = True
                log.warning("the last provider calls could not be shared in %s: %s", folder, error)

    def _merged(self, folder: Path) -> dict[tuple[str, str], LastCall]:
        """The newest call of each ``(use, provider)`` over every process's file and this
        process's own; a file that cannot be read (its process ending) is passed over."""
        merged = dict(self._calls)
        own = LAST_CALLS_FILE.format(pid=os.getpid())
        for path in folder.glob(LAST_CALLS_FILE.format(pid="*")):
            if path.name == own:
                continue
            try:
                shared = json.loads(path.read_text(encoding="utf-8"))
                calls = [
                    (use, LastCall(provider, task, float(ended), _failure(failed)))
                    for use, provider, task, ended, failed in shared
                ]
            except (OSError, ValueError, TypeError, KeyError):
                continue
            for use, call in calls:
                known = merged.get((use, call.provider))
                if known is None or call.ended > known.ended:
                    merged[use, call.provider] = call
        return merged


def _attempt(failed: Attempt | None) -> list[object] | None:
    if failed is None:
        return None
    return [failed.provider, failed.failure.value, failed.status, failed.reason]


def _failure(shared: list[object] | None) -> Attempt | None:
    if shared is None:
        return None
    provider, failure, status, reason = shared
    return Attempt(
        str(provider),
        FailureKind(failure),
        int(status) if isinstance(status, int) else None,
        str(reason) if isinstance(reason, str) else None,
    )


#: this process's (shared with the other processes of one ``ragchat serve``, if any)
LAST_CALLS = LastCalls(MULTIPROCESS)
