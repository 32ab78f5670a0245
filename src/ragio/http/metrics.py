"""GET /metrics, and every HTTP request counted for it (``ragio.metrics``).

``RequestMetrics`` is ASGI middleware around the whole app, so it sees every answer, the
401s, 404s and 408s included, and times a streamed answer to its last byte. A request is
labelled by the template of the route it matched (``/documents/<id>``), never by its
path, so a client cannot make new series; a path no route matches is ``unmatched``, a
method outside HTTP's own ``OTHER``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from datetime import datetime
from typing import Any

import psycopg
import trio
from quart import Blueprint, Response
from werkzeug.exceptions import HTTPException, MethodNotAllowed
from werkzeug.routing import MapAdapter

from ragcore.api.operations import Reply, operation
from ragio import metrics
from ragio.http.context import service
from ragio.http.routes import fixed_routes
from ragio.service import Service

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]

PATH = "/metrics"
UNMATCHED = "unmatched"
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"))
#: an answer given up before its status was sent (the client left, the server stopped)
NO_STATUS = "none"
#: how long a scrape waits for the database's count of pending approvals
DATABASE_WAIT_SECONDS = 1.0
TEXT_FORMAT = ({"type": "string"}, metrics.CONTENT_TYPE.split(";")[0])

blueprint = Blueprint("metrics", __name__)


@blueprint.get(PATH)
@operation(Reply(200, "Prometheus text exposition format, version 0.0.4", *TEXT_FORMAT))
async def get_metrics() -> Response:
    """The service's metrics, for Prometheus

    Requests by method, route template and status, with a latency histogram per route;
    provider calls, failures and tokens; requests in flight, channel messages being
    answered and waiting, database connections in use and waited for, voice calls in
    progress, actions pending approval and data-source syncs running; the process's
    CPU and memory. Counters start at zero when the process starts. Where one
    `ragchat serve` runs several processes, the sum over them all, whichever answers
    (and no CPU and memory). Behind the API key unless METRICS_PUBLIC=true.
    """
    counts = await _database_counts(service())
    metrics.PENDING_APPROVALS.value, metrics.SYNCS_RUNNING.value = counts or (None, None)
    return Response(metrics.exposition(), content_type=metrics.CONTENT_TYPE)


async def _database_counts(svc: Service) -> tuple[int, int] | None:
    """Actions pending approval and syncs running, or None when the database did not give
    them in time (they are left out of the scrape then)."""
    now = svc.clock.now()
    with trio.move_on_after(DATABASE_WAIT_SECONDS):
        try:
            return await svc.database.run(_count, now)
        except (psycopg.Error, OSError):
            return None
    return None


def _count(conn: psycopg.Connection, now: datetime) -> tuple[int, int]:
    row = conn.execute(
        """SELECT (SELECT count(*) FROM actions
                    WHERE status = 'pending' AND expires_at > %s),
                  (SELECT count(*) FROM integrations WHERE sync_status = 'syncing')""",
        (now,),
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


class RequestMetrics:
    """Wraps the app's ASGI callable: counts and times each HTTP request by its route."""

    def __init__(self, app: ASGIApp, routes: Any) -> None:
        self.app = app
        self.routes = routes  # the Quart app's url_map
        self._adapter: MapAdapter | None = None
        self._fixed: Mapping[str, frozenset[str]] = {}

    def route(self, method: str, path: str) -> str:
        """The template of the route ``path`` matches (for a 405: of any method); a route
        of its own, whatever the method (``ragio.http.routes``)."""
        if self._adapter is None:  # every blueprint is registered by the first request
            self._adapter = self.routes.bind("localhost")
            self._fixed = fixed_routes(self.routes)
        if path in self._fixed:
            return path
        try:
            rule, _ = self._adapter.match(path, method, return_rule=True)
        except MethodNotAllowed as refused:
            for allowed in refused.valid_methods or ():
                try:
                    rule, _ = self._adapter.match(path, allowed, return_rule=True)
                except HTTPException:
                    continue
                return str(rule.rule)
            return UNMATCHED
        except HTTPException:  # no route, or a redirect to one (a trailing slash)
            return UNMATCHED
        return str(rule.rule)

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"] if scope["method"] in METHODS else "OTHER"
        route = self.route(scope["method"], scope["path"])
        started = time.perf_counter()
        status = NO_STATUS
        done = False

        def finish() -> None:
            nonlocal done
            if not done:
                done = True
                metrics.HTTP_REQUESTS.labels(method, route, status).inc()
                metrics.HTTP_LATENCY.labels(method, route).observe(time.perf_counter() - started)

        async def counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = str(message["status"])
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finish()  # the last bytes are handed over: the answer is complete
            await send(message)

        metrics.HTTP_IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, counted)
        finally:
            metrics.HTTP_IN_FLIGHT.dec()
            finish()


def install(app: Any) -> None:
    """Add GET /metrics to ``app`` and count every request it answers: wraps
    ``app.asgi_app``, so call it once the app's own wrapping is done."""
    app.register_blueprint(blueprint)
    app.asgi_app = RequestMetrics(app.asgi_app, app.url_map)
