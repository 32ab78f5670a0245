"""The running service: what a request works with (settings, clock, database, providers,
the handler of every effect). ``ragio.startup`` opens and closes it as one.

It sits low in ragio's layers, under the runner and the areas that type their work
against it; only the table of handlers it carries is filled from above
(``ragio.registry``), when ``ragio.startup`` builds it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import httpx
import trio

from ragcore.effects import Effect
from ragcore.live.cache import Held
from ragcore.settings import Settings
from ragio.clock import Clock, SystemClock
from ragio.db.pool import Database
from ragio.db.presence import process_name
from ragio.db.source_connections import SourceConnections
from ragio.graph.service import Graph
from ragio.language import LanguageDetection
from ragio.providers import AnswererChain, Embedder
from ragio.providers.chain import OnDelta
from ragio.tracing import Tracing

#: ``async def handler(effect, service) -> result``: executes one type of effect
Handler = Callable[[Any, "Service"], Awaitable[Any]]
#: ``async def handler(effect, service, on_delta) -> result``: the same, passing the text
#: to ``on_delta`` as it is produced when the caller streams (``run(..., on_delta)``)
StreamHandler = Callable[[Any, "Service", OnDelta], Awaitable[Any]]
EffectType = type[Effect[Any]]
#: what an area exports: the handler of each of its effects
HandlerTable = Mapping[EffectType, Handler]
StreamHandlerTable = Mapping[EffectType, StreamHandler]


@attrs.frozen
class Handlers:
    """Which handler executes each type of effect; ``streaming`` ones are used instead
    when the caller streams."""

    plain: HandlerTable
    streaming: StreamHandlerTable = attrs.field(factory=dict)


OUTBOUND_TIMEOUT_SECONDS = 10.0


def outbound_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(OUTBOUND_TIMEOUT_SECONDS), follow_redirects=False
    )


@attrs.define
class Service:
    settings: Settings
    database: Database
    embedder: Embedder
    answerer: AnswererChain  # the primary, then the fallbacks (rule 6); see ragio.runner
    language: LanguageDetection
    # the handler of every effect, by which ragio.runner executes pipelines
    handlers: Handlers
    # the platforms' APIs (channel replies, the owner's notifications): one pool,
    # a timeout on every request, redirects never followed
    outbound: httpx.AsyncClient = attrs.field(factory=outbound_client)
    clock: Clock = attrs.field(factory=SystemClock)  # every wall-clock read (ragio.clock)
    # live-data actions (ragcore.live): the 5-minute results cache and the enabled actions
    live: Held = attrs.field(factory=Held)
    # the connections to the owner's databases kept between live queries, a few per source
    # (ragio.db.source_connections): dropped when a source is edited or deleted
    source_connections: SourceConnections = attrs.field(factory=SourceConnections)
    # the knowledge graph (ragio.graph.service): off unless GRAPH_ENABLED / GRAPH_URI
    graph: Graph = attrs.field(factory=Graph.off)
    # set on SIGTERM/SIGINT (ragio.server): take no new work (readiness says 503, the voice
    # server refuses calls, a worker claims no job) and finish what runs within
    # SHUTDOWN_GRACE_SECONDS
    stopping: trio.Event = attrs.field(factory=trio.Event)
    # this process among all on the database (ragio.db.presence): who holds a job, a delivery
    process: str = attrs.field(factory=process_name)
    # OpenTelemetry traces (ragio.tracing): off unless OTEL_EXPORTER_OTLP_ENDPOINT
    tracing: Tracing = attrs.field(
        default=attrs.Factory(lambda self: Tracing(self.settings), takes_self=True)
    )

    @property
    def mode(self) -> str:
        """offline when no provider outside this machine is used."""
        offline = self.embedder.name == "local" and self.answerer.name == "extractive"
        return "offline" if offline else "online"
