"""The Quart-Trio app: routes, the API key rule, and problem+json for every error."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs
from quart import Response, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from ragcore.api.openai_compat import OpenAIError
from ragcore.converter import converter
from ragcore.errors import InvalidInput
from ragcore.inputs import NestedTooDeep
from ragcore.knowledge.documents import NameTaken
from ragio import tracing
from ragio.employees.lookup import UnknownRole
from ragio.http import (
    actions,
    answers,
    chat,
    console,
    conversation_events,
    conversations,
    documents,
    employees,
    graph,
    health,
    integrations,
    jobs,
    keys,
    live_actions,
    metrics,
    openai_compat,
    profile,
    spec,
    status,
    usage,
    voice,
    webhooks,
    websites,
    widget,
    widget_sites,
    workflows,
)
from ragio.http.access import Unknown, admit, presented_key, with_rate
from ragio.http.connections import ConnectionGuard
from ragio.http.context import EXTENSION
from ragio.http.inputs import check_request_text
from ragio.http.problems import Problem, problem_for, problem_response
from ragio.http.routes import fixed_routes, openapi_path
from ragio.providers.failures import AnswerFailed, EmbeddingFailed
from ragio.service import Service
from ragio.tracing import TracedApp

log = logging.getLogger(__name__)
OPEN_PATHS = ("/health", "/health/live", "/health/ready", "/", "/docs", *widget.OPEN_PATHS)
MULTIPART_HEADROOM = 64 * 1024
OPEN_PREFIXES = ("/webhook/", "/console/")
#: the OpenAI-compatible API: its errors are OpenAI-shaped, for the clients that call it
OPENAI_PREFIX = "/v1/"


def error_response(problem: Problem, headers: dict[str, str] | None = None) -> Response:
    """The error as the caller's kind of client reads it: OpenAI-shaped under /v1/,
    problem+json everywhere else."""
    if request.path.startswith(OPENAI_PREFIX):
        return openai_compat.error_response(openai_compat.openai_error(problem), headers)
    return problem_response(problem, headers)


class App(QuartTrio):
    """A route answers with a shape of ``ragcore.api`` (alone, or first in a tuple with a
    status and headers): the one converter turns it into JSON."""

    async def make_response(self, result: Any) -> Any:
        if isinstance(result, tuple) and result and attrs.has(type(result[0])):
            result = (converter.unstructure(result[0]), *result[1:])
        elif attrs.has(type(result)):
            result = converter.unstructure(result)
        return await super().make_response(result)


def create_app(svc: Service) -> QuartTrio:
    app = App("ragchat", static_folder=None)
    app.extensions[EXTENSION] = svc
    # The file itself is held to MAX_UPLOAD_BYTES by the route; the body may be a little
    # larger for the multipart framing around a file just under the limit.
    app.config["MAX_CONTENT_LENGTH"] = svc.settings.max_upload_bytes + MULTIPART_HEADROOM
    app.json.sort_keys = False  # type: ignore[attr-defined]
    # when the app stops, its background work (a running job) has the grace period to end
    app.config["BACKGROUND_TASK_SHUTDOWN_TIMEOUT"] = svc.settings.shutdown_grace_seconds
    modules = (
        health,
        answers,
        chat,
        conversation_events,
        conversations,
        documents,
        jobs,
        graph,
        employees,
        profile,
        usage,
        status,
        workflows,
        integrations,
        live_actions,
        openai_compat,
        webhooks,
        voice,
        actions,
        spec,
        console,
        widget,
        websites,
        widget_sites,
        keys,
    )
    for module in modules:
        app.register_blueprint(module.blueprint)

    open_paths = (*OPEN_PATHS, metrics.PATH) if svc.settings.metrics_public else OPEN_PATHS
    fixed: dict[str, Mapping[str, frozenset[str]]] = {}

    def fixed_methods(path: str) -> frozenset[str] | None:
        """The methods of ``path`` when it is a route of its own (``ragio.http.routes``)."""
        if not fixed:  # every route is registered by the first request
            fixed["routes"] = fixed_routes(app.url_map)
        return fixed["routes"].get(path)

    @app.before_request
    async def refuse_other_methods_of_a_route() -> None:
        """A route of its own asked with a method it does not take is 405, also when a
        route with a variable part would take the path and the method (PATCH
        /live-actions/runs is not the live action ``runs``). Like every 405, before the
        API key is looked at."""
        rule = request.url_rule
        if rule is not None and rule.arguments:
            methods = fixed_methods(request.path)
            if methods is not None:
                raise MethodNotAllowed(valid_methods=sorted(methods))

    @app.before_request
    async def name_the_trace() -> None:
        """The request's span named by its route, once routed (``ragio.tracing``)."""
        if request.url_rule is not None:
            tracing.name_by_route(request.method, openapi_path(request.url_rule.rule))

    @app.before_request
    async def require_api_key() -> Response | None:
        """The request's key admitted to its route (``ragio.http.access.admit``): a key
        not known is a 401 saying how it came; revoked or expired, 401; over its rate,
        429; without the route's scope, 403."""
        if request.path in open_paths or request.path.startswith(OPEN_PREFIXES):
            return None
        rule = request.url_rule
        try:
            await admit(openapi_path(rule.rule) if rule is not None else None)
        except Unknown:
            pass
        except Problem as error:
            return error_response(error, getattr(error, "headers", None))
        else:
            return None
        given = presented_key()
        if not given:
            detail = "send the API key in the X-API-Key header or as Authorization: Bearer <key>"
        elif "X-API-Key" in request.headers:
            detail = "wrong X-API-Key"
        else:
            detail = "wrong API key in Authorization: Bearer"
        if request.path.startswith(OPENAI_PREFIX):
            code = "invalid_api_key"
            refused = OpenAIError(401, f"Incorrect API key provided: {detail}", code=code)
            return openai_compat.error_response(refused, {"WWW-Authenticate": "Bearer"})
        return problem_response(Problem(401, detail), headers={"WWW-Authenticate": "X-API-Key"})

    app.before_request(check_request_text)  # after the key: strangers learn nothing more
    app.after_request(with_rate)

    @app.errorhandler(Problem)
    @app.errorhandler(InvalidInput)
    @app.errorhandler(NestedTooDeep)
    @app.errorhandler(AnswerFailed)
    @app.errorhandler(EmbeddingFailed)
    @app.errorhandler(UnknownRole)
    @app.errorhandler(NameTaken)
    async def on_known(error: Exception) -> Response:
        if isinstance(error, AnswerFailed | EmbeddingFailed):
            log.warning("%s %s: %s", request.method, request.path, error)  # names no key
        return error_response(problem_for(error))

    @app.errorhandler(OpenAIError)
    async def on_openai(error: OpenAIError) -> Response:
        if error.__cause__ is not None and error.status >= 500:
            log.warning("%s %s: %s", request.method, request.path, error.__cause__)
        return openai_compat.error_response(error)

    @app.errorhandler(HTTPException)
    async def on_http(error: HTTPException) -> Response:
        status = error.code or 500
        detail = {
            404: f"no route {request.path}; see /openapi.json",
            405: f"{request.method} is not allowed on {request.path}",
            413: f"the body is larger than the limit of {svc.settings.max_upload_bytes} bytes "
            "(MAX_UPLOAD_BYTES)",
        }.get(status, error.description or "")
        allowed = getattr(error, "valid_methods", None)
        if status == 405:  # a route of its own allows its methods, not a pattern's too
            allowed = sorted(fixed_methods(request.path) or allowed or ())
        headers = {"Allow": ", ".join(allowed)} if allowed else None
        return error_response(Problem(status, detail), headers=headers)

    @app.errorhandler(Exception)
    async def on_error(error: Exception) -> Response:
        problem = problem_for(error)
        if problem.status in (503, 507):  # the database or a disk: a line, not a traceback
            log.warning(
                "%s %s: %d, %s (%s)",
                request.method,
                request.path,
                problem.status,
                problem.title,
                type(error).__name__,
            )
        else:
            log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(problem)

    # read timeout for bodies, a close after a refused body, and Hypercorn's closing work
    # kept from being cancelled: see ragio.http.connections
    app.asgi_app = ConnectionGuard(  # type: ignore[method-assign]
        app.asgi_app, svc.settings.http_read_timeout_seconds
    )
    metrics.install(app)  # GET /metrics, and every request counted around all of the above
    if svc.tracing.on:  # a trace of each request, around everything (ragio.tracing)
        app.asgi_app = TracedApp(app.asgi_app, svc.tracing)  # type: ignore[method-assign]
    return app
