"""What this process has done, counted for ``GET /metrics`` (the Prometheus text format).

One registry per process, as Prometheus scrapes a process: every counter starts at zero
when the process starts. Unless the process is one of several of one ``ragchat serve``
behind one port: then ``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's own variable,
read at import) names a folder they share, each process writes its values to files
there, and ``exposition`` answers the sum over them all (``MULTIPROCESS``, below); the
gauges are kept as they change, so each process's is current whichever one is scraped.
The HTTP side (requests, latency, requests in flight) is counted by
``ragio.http.metrics``; provider calls, their failures and tokens by
``ragio.providers.chain``; calls in progress by the voice server. Labels take values from
small, fixed sets only (a route's template, never its path; a provider's name; a task),
so the number of series stays bounded whatever the clients send.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

if TYPE_CHECKING:  # imported where used: a supervisor imports this module, not Trio
    import trio

disable_created_metrics()  # no ``_created`` series beside every counter: the start is one
REGISTRY = CollectorRegistry()
#: the classic text format every Prometheus reads (the client's default, 1.0.0, needs 3.x)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: the folder the processes of one ``ragchat serve`` share their values in, set by it for
#: each process it starts (prometheus_client reads it at its import, and so do we); None:
#: this process counts for itself
_FOLDER = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
MULTIPROCESS = Path(_FOLDER) if _FOLDER is not None else None
#: each process's last provider calls in that folder (``ragio.providers.last_calls``)
LAST_CALLS_FILE = "last_calls_{pid}.json"
if MULTIPROCESS is None:
    # the process's CPU, memory, open files and start time; the Python runtime's collections
    for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        REGISTRY.register(_collector)

#: how each gauge adds up over the processes: the sum of the processes alive (one that has
#: ended is taken out by ``process_ended``); each is kept as its value changes, never set
#: at a scrape (a scrape reaches one process, the others' would stay as they were)
LIVE: Final = "livesum"
#: seconds; an answer from a remote model may take up to PROVIDER_TIMEOUT_SECONDS (60) per
#: provider, so the buckets reach past a minute
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

HTTP_REQUESTS = Counter(
    "ragchat_http_requests",
    "HTTP requests answered, by method, route template and status",
    ("method", "route", "status"),
    registry=REGISTRY,
)
HTTP_LATENCY = Histogram(
    "ragchat_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer (a stream's last byte), by "
    "method and route template",
    ("method", "route"),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
HTTP_IN_FLIGHT = Gauge(
    "ragchat_http_requests_in_flight",
    "HTTP requests being answered now",
    multiprocess_mode=LIVE,
    registry=REGISTRY,
)
PROVIDER_CALLS = Counter(
    "ragchat_provider_calls",
    "Calls to a model provider (each provider of a fallback chain tried counts once), by "
    "provider and task (answer, check, summary, embedding)",
    ("provider", "task"),
    registry=REGISTRY,
)
PROVIDER_FAILURES = Counter(
    "ragchat_provider_failures",
    "Provider calls that failed, by provider, task and how (rate_limited, unavailable, "
    "timeout, bad_key, rejected, bad_reply)",
    ("provider", "task", "failure"),
    registry=REGISTRY,
)
PROVIDER_LATENCY = Histogram(
    "ragchat_provider_call_duration_seconds",
    "Time a provider call took, failed or not (a stream: until its last words), by provider "
    "and task",
    ("provider", "task"),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
TOKENS = Counter(
    "ragchat_tokens",
    "Tokens of the model calls answered, by provider, role (none without one) and kind "
    "(prompt, completion; embedding: the texts embedded, role none); as the provider "
    "reported them, else estimated at 4 characters a token",
    ("provider", "role", "kind"),
    registry=REGISTRY,
)
API_KEY_REQUESTS = Counter(
    "ragchat_api_key_requests",
    "Requests made with API keys made with /keys (SERVICE_API_KEY's are not counted), by key "
    "(its name: at most a thousand keys) and result: allowed, forbidden (403: not its "
    "scope), limited (429: over its rate), refused (401: revoked or expired)",
    ("key", "result"),
    registry=REGISTRY,
)
API_KEY_TOKENS = Counter(
    "ragchat_api_key_tokens",
    "Model tokens (prompt and completion) of the questions asked with API keys made with "
    "/keys, by key (its name)",
    ("key",),
    registry=REGISTRY,
)
WIDGET_QUESTIONS = Counter(
    "ragchat_widget_questions",
    "Questions the chat widget's visitors asked, by result: taken, or the quota that "
    "refused it (visitor_day, ip_hour, ip_day, tokens_day)",
    ("result",),
    registry=REGISTRY,
)
FEEDBACK = Counter(
    "ragchat_feedback",
    "Ratings given to answers (each time one is given; one taken back is not counted), by "
    "the conversation's channel (chat, openai, web, telegram, …) and rating (up, down)",
    ("channel", "rating"),
    registry=REGISTRY,
)
HANDOFFS = Counter(
    "ragchat_handoffs",
    "Customers' conversations handed to a person, by channel and by whom: customer "
    "(asked), rule (refusals in a row, a role's topic) or the owner (console, api, "
    "telegram owner)",
    ("channel", "by"),
    registry=REGISTRY,
)
HANDOFF_FIRST_REPLY = Histogram(
    "ragchat_handoff_first_reply_seconds",
    "From a conversation's handoff to a person's first message in it, by channel",
    ("channel",),
    buckets=(30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400),
    registry=REGISTRY,
)
OWNER_ANSWERS = Counter(
    "ragchat_owner_answers",
    "Answers from an owner's answer, by channel and how: served (its text is the answer, "
    "no model asked) or cited (given to the model as its first source, and cited)",
    ("channel", "how"),
    registry=REGISTRY,
)
VOICE_CALLS = Gauge(
    "ragchat_voice_calls_in_progress",
    "Phone calls being answered by the voice server now",
    multiprocess_mode=LIVE,
    registry=REGISTRY,
)
VOICE_CALLS_REFUSED = Counter(
    "ragchat_voice_calls_refused",
    "Media streams refused, by reason (unverified, busy: VOICE_MAX_CALLS reached, "
    "shutting_down: the service stops)",
    ("reason",),
    registry=REGISTRY,
)
CHANNEL_ANSWERS = Gauge(
    "ragchat_channel_answers_in_progress",
    "Text-channel messages (Telegram, WhatsApp, Discord) being answered now, at most 8 a process",
    multiprocess_mode=LIVE,
    registry=REGISTRY,
)
CHANNEL_ANSWERS_WAITING = Gauge(
    "ragchat_channel_answers_waiting",
    "Text-channel messages acknowledged and waiting for one of their process's 8 answering places",
    multiprocess_mode=LIVE,
    registry=REGISTRY,
)
DATABASE_CONNECTIONS = Gauge(
    "ragchat_database_connections_in_use",
    "Database connections held by work now (at most the pool's size, 8, a process)",
    multiprocess_mode=LIVE,
    registry=REGISTRY,
)
DATABASE_WAITING = Gauge(
    "ragchat_database_waiting",
    "Tasks waiting for a database connection now: every pooled connection is busy",
    multiprocess_mode=LIVE,
    registry=REGISTRY,
)
NO_ROLE = "none"
#: the ``kind`` of ``ragchat_tokens_total`` counting an embedding call's input
EMBEDDING_KIND = "embedding"


class Scraped:
    """A gauge whose value is read at each scrape by the route (from the database: it
    cannot be read here, synchronously); absent from the scrape when it could not be read."""

    def __init__(self, name: str, documentation: str) -> None:
        self.name, self.documentation = name, documentation
        self.value: float | None = None
        REGISTRY.register(self)

    def collect(self) -> Iterator[Metric]:
        if self.value is not None:
            yield GaugeMetricFamily(self.name, self.documentation, value=self.value)

    def describe(self) -> Iterator[Metric]:
        return iter(())


PENDING_APPROVALS = Scraped(
    "ragchat_actions_pending_approval",
    "Outbound actions waiting for the owner's approval (read from the database at each "
    "scrape; absent when the database did not answer in time)",
)
SYNCS_RUNNING = Scraped(
    "ragchat_integration_syncs_running",
    "Data sources marked syncing, by any process (read from the database at each scrape; "
    "absent when the database did not answer in time)",
)


if MULTIPROCESS is None:
    _EXPOSED = REGISTRY
else:
    # The values of every process, summed, from their files; the gauges read at each scrape
    # (``Scraped``: the whole service's, from the database) once, from this process. No
    # ``process_*`` nor ``python_gc_*`` series: they are one process's, and a scrape
    # behind one port reaches any of them (a CPU counter jumping between processes).
    _EXPOSED = CollectorRegistry()
    MultiProcessCollector(_EXPOSED, str(MULTIPROCESS))
    _EXPOSED.register(PLATFORM_COLLECTOR)
    for _scraped in (PENDING_APPROVALS, SYNCS_RUNNING):
        _EXPOSED.register(_scraped)


def exposition() -> bytes:
    """Every metric in the Prometheus text format: this process's, or with
    ``PROMETHEUS_MULTIPROC_DIR`` the sum over the processes that share that folder."""
    return generate_latest(_EXPOSED)


def process_ended(pid: int) -> None:
    """What the process ``pid`` had shared, forgotten once it has ended: its gauges (the
    requests it was answering, its calls in progress) and its last provider calls. Its
    counters and histograms stay in the sums, as Prometheus expects of a counter. For the
    supervisor of the processes; the folder is read now from ``PROMETHEUS_MULTIPROC_DIR``
    (nothing to do without it), and a process that wrote nothing is fine."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return
    mark_process_dead(pid, folder)
    Path(folder, LAST_CALLS_FILE.format(pid=pid)).unlink(missing_ok=True)


class Occupancy:
    """A ``trio.CapacityLimiter`` whose holders and waiters are kept in two gauges as they
    come and go (``in_use``, ``waiting``): the limiter's ``statistics()`` as a gauge each
    process keeps for the sums, at a scrape or not. Pass it where the limiter would go
    (``trio.to_thread.run_sync(…, limiter=)``), or ``async with`` it."""

    def __init__(self, limiter: trio.CapacityLimiter, in_use: Gauge, waiting: Gauge) -> None:
        self.limiter, self.in_use, self.waiting = limiter, in_use, waiting

    async def acquire_on_behalf_of(self, borrower: Any) -> None:
        import trio

        try:
            self.limiter.acquire_on_behalf_of_nowait(borrower)
        except trio.WouldBlock:
            self.waiting.inc()
            try:
                await self.limiter.acquire_on_behalf_of(borrower)
            finally:
                self.waiting.dec()
        else:  # as the limiter itself does: an async function always checkpoints
            await trio.lowlevel.cancel_shielded_checkpoint()
        self.in_use.inc()

    def release_on_behalf_of(self, borrower: Any) -> None:
        self.limiter.release_on_behalf_of(borrower)
        self.in_use.dec()

    async def __aenter__(self) -> None:
        from trio.lowlevel import current_task

        await self.acquire_on_behalf_of(current_task())

    async def __aexit__(self, *exc: object) -> None:
        from trio.lowlevel import current_task

        self.release_on_behalf_of(current_task())
