"""The processes of one `ragchat serve`: how many answer the API, and when one that died
is started again (the supervisor is ``ragio.supervisor``).

One Python process answers with one core at most (its main thread holds the GIL), so
``serve`` runs APP_WORKERS of them on the one port, by default one per core it may use:
the cores the scheduler lets it run on, and fewer when a container's CPU quota
(cgroup v2's ``cpu.max``: "quota period", or "max") allows fewer.

A process that dies is started again, after a pause that doubles with each death in a
row (a process that keeps failing on start, a database that is down, does not spin),
and starts from the shortest again once a process has run ``STEADY_SECONDS``.
"""

from __future__ import annotations

import math

#: the first pause before a dead process is started again, and the longest
FIRST_RESTART_SECONDS = 0.5
LONGEST_RESTART_SECONDS = 30.0
#: a process that ran this long died on its own account, not its predecessors'
STEADY_SECONDS = 60.0


def cores_allowed(schedulable: int, cpu_max: str | None) -> int:
    """The cores a process may use: ``schedulable`` (its CPU affinity), at most the
    container's quota rounded up; ``cpu_max`` is cgroup v2's ``cpu.max`` text, None
    where there is none."""
    cores = max(1, schedulable)
    fields = (cpu_max or "").split()
    if len(fields) < 2 or fields[0] == "max":
        return cores
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return cores
    if quota <= 0 or period <= 0:
        return cores
    return max(1, min(cores, math.ceil(quota / period)))


def api_processes(app_workers: int, cores: int) -> int:
    """How many API processes ``serve`` runs: APP_WORKERS, or one per core for 0."""
    return app_workers if app_workers > 0 else max(1, cores)


def restart_delay(deaths_in_a_row: int) -> float:
    """Seconds to wait before starting a process again after its ``deaths_in_a_row``-th
    death in a row (1 for the first)."""
    doubled = FIRST_RESTART_SECONDS * float(2 ** max(0, min(deaths_in_a_row - 1, 16)))
    return min(LONGEST_RESTART_SECONDS, doubled)


def deaths_in_a_row(before: int, ran_seconds: float) -> int:
    """The count after one more death, of a process that ran ``ran_seconds``: a process
    that ran steadily starts the count again."""
    return 1 if ran_seconds >= STEADY_SECONDS else before + 1
