"""OpenTelemetry traces, sent over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT; off (no
tracer, nothing sent, nothing imported from the SDK) while it is unset.

One trace per HTTP request (``TracedApp``, the server span, which a client's W3C
``traceparent`` continues) and per turn of a phone call (``voiceio.call``). Beneath it,
a span for each effect the runner executes (``effect_span``, in ``ragio.runner.execute``)
and, beneath the model's effects, a span for each provider call, fallbacks included
(``provider_span``, in ``ragio.providers.chain``), named and described after the GenAI
semantic conventions (``chat gpt-4o-mini``: ``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``…,
``error.type`` with the failure's kind). The pure core knows none of it: spans are made
where effects run.

A span carries names, counts and kinds only: never a question, an answer, a key or an
error's message (a provider's message may quote the key it refused), so an exception is
recorded by its type alone. The trace's id is in each log line written while it runs
(``TraceIds``) and in a problem's body (``trace_id``), so a user's report finds its trace.

The tracer in use is the request's (or the call's) context's (``use``): a process that
serves several services (the tests) traces each with its own.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ragcore import __version__
from ragcore.settings import Settings

log = logging.getLogger(__name__)
#: seconds a batch of spans may take to reach the collector (the exporter's timeout)
EXPORT_TIMEOUT_SECONDS = 10.0
NO_TRACER: Tracer = trace.NoOpTracer()
_TRACER: ContextVar[Tracer] = ContextVar("ragchat_tracer", default=NO_TRACER)
_NOTHING = nullcontext()
_PROPAGATOR = TraceContextTextMapPropagator()
_WORD = re.compile(r"(?<!^)(?=[A-Z])")


class Tracing:
    """The service's tracer, and the processor that sends its spans; off: ``NO_TRACER``."""

    def __init__(self, settings: Settings) -> None:
        self.tracer: Tracer = NO_TRACER
        self._provider: Any = None
        endpoint = settings.otel_exporter_otlp_endpoint
        if not endpoint:
            return
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = OTLPSpanExporter(
            endpoint=f"{endpoint}/v1/traces",
            headers=headers(settings.otel_exporter_otlp_headers),
            timeout=EXPORT_TIMEOUT_SECONDS,
        )
        resource = Resource.create(
            {"service.name": settings.otel_service_name, "service.version": __version__}
        )
        self._provider = TracerProvider(resource=resource)
        self._provider.add_span_processor(
            BatchSpanProcessor(exporter, export_timeout_millis=EXPORT_TIMEOUT_SECONDS * 1000)
        )
        self.tracer = self._provider.get_tracer("ragchat", __version__)

    @property
    def on(self) -> bool:
        return self._provider is not None

    def flush(self) -> bool:
        """Send the spans ended so far (blocking: run it in a thread)."""
        return bool(self._provider.force_flush()) if self._provider is not None else True

    def shutdown(self) -> None:
        """Send what is left and stop (blocking: run it in a thread)."""
        if self._provider is not None:
            self._provider.shutdown()


def headers(raw: str) -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS as the specification writes it: ``key=value`` pairs
    joined by commas, each part URL-encoded."""
    found = {}
    for pair in raw.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            found[unquote(key.strip())] = unquote(value.strip())
    return found


@contextmanager
def use(tracer: Tracer) -> Iterator[None]:
    """Make the spans of what runs within (and of the tasks it starts) with ``tracer``."""
    token = _TRACER.set(tracer)
    try:
        yield
    finally:
        _TRACER.reset(token)


def tracer() -> Tracer:
    return _TRACER.get()


def on() -> bool:
    """Whether what runs now is traced."""
    return _TRACER.get() is not NO_TRACER


def span_name(kind: type) -> str:
    """An effect's span name: its type's name in snake case (``SearchChunks``:
    ``search_chunks``)."""
    return _WORD.sub("_", kind.__name__).lower()


def effect_span(kind: type) -> AbstractContextManager[Any]:
    """The span of an effect of type ``kind`` run now (nothing when untraced). A failure
    marks it with the error's type, never its message."""
    traced = _TRACER.get()
    if traced is NO_TRACER:
        return _NOTHING
    return _span(traced, span_name(kind), {"ragchat.effect": kind.__name__})


@contextmanager
def _span(traced: Tracer, name: str, attributes: Mapping[str, Any]) -> Iterator[Span]:
    with traced.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as error:
            failed(span, type(error).__name__)
            raise


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span of work of ours (speech on a call, say) made current while it runs."""
    traced = _TRACER.get()
    if traced is NO_TRACER:
        return _NOTHING
    return _span(traced, name, attributes)


def root_span(
    name: str, started_ns: int | None, attributes: Mapping[str, Any]
) -> AbstractContextManager[Any]:
    """A trace of its own (a call's turn), begun at ``started_ns`` (None: now), current
    while it runs; nothing when untraced."""
    traced = _TRACER.get()
    if traced is NO_TRACER:
        return _NOTHING
    begun = traced.start_span(
        name, context=otel_context.Context(), attributes=attributes, start_time=started_ns
    )
    return trace.use_span(
        begun, end_on_exit=True, record_exception=False, set_status_on_exception=False
    )


def failed(span: Span, kind: str) -> None:
    """Mark ``span`` failed, with the failure's kind (``error.type``) and nothing more."""
    span.set_attribute("error.type", kind)
    span.set_status(StatusCode.ERROR, kind)


def provider_span(operation: str, provider: str, model: str) -> Span | None:
    """The span of one call to a provider (GenAI semantic conventions: ``chat`` or
    ``embeddings``), begun now as a child of the current span; the caller ends it
    (``provider_ended``). None when untraced."""
    traced = _TRACER.get()
    if traced is NO_TRACER:
        return None
    return traced.start_span(
        f"{operation} {model}".strip(),
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
            "gen_ai.request.model": model,
        },
    )


def provider_ended(
    span: Span | None,
    failure: str | None = None,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> None:
    """End a provider call's span with what it used (the provider's counts; none when it
    reported none) or its failure's kind."""
    if span is None:
        return
    if model:
        span.set_attribute("gen_ai.response.model", model)
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
    if failure is not None:
        failed(span, failure)
    span.end()


def timed_span(name: str, started_ns: int, ended_ns: int, **attributes: Any) -> None:
    """A span of work seen only once it was over (a call's transcript: from the caller's
    first words heard to the final one), under the current span."""
    traced = _TRACER.get()
    if traced is NO_TRACER:
        return
    done = traced.start_span(name, start_time=started_ns, attributes=attributes)
    done.end(end_time=ended_ns)


def now_ns() -> int:
    return time.time_ns()


def trace_id() -> str | None:
    """The id of the trace running now, as 32 hex digits; None when untraced."""
    found = trace.get_current_span().get_span_context()
    return f"{found.trace_id:032x}" if found.is_valid else None


def continued(carrier: Mapping[str, str]) -> otel_context.Context:
    """The context a client's ``traceparent`` (and ``tracestate``) continues."""
    return _PROPAGATOR.extract(carrier)


class TraceIds(logging.Filter):
    """Give each log record written inside a trace its ``trace_id`` and ``span_id`` (the
    JSON log format writes them as fields, the text format at the line's end)."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = trace.get_current_span().get_span_context()
        if found.is_valid:
            record.trace_id = f"{found.trace_id:032x}"
            record.span_id = f"{found.span_id:016x}"
        return True


class TracedApp:
    """The ASGI app with a server span around each HTTP request, from its first byte to
    its response's last (a streamed answer's too): ``METHOD route`` with the request's
    method, route and status; a client's ``traceparent`` continues its trace. The
    service's tracer is made the request's. Other scopes (lifespan) pass as they are."""

    def __init__(self, app: Any, tracing: Tracing) -> None:
        self.app, self.tracing = app, tracing

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.tracing.on:
            await self.app(scope, receive, send)
            return
        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name in (b"traceparent", b"tracestate")
        }
        method = scope.get("method", "GET")
        traced = self.tracing.tracer
        with (
            use(traced),
            traced.start_as_current_span(
                method,
                context=continued(carrier),
                kind=SpanKind.SERVER,
                attributes={"http.request.method": method, "url.path": scope.get("path", "")},
                record_exception=False,
                set_status_on_exception=False,
            ) as span,
        ):

            async def sending(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(StatusCode.ERROR, str(status))
                await send(message)

            try:
                await self.app(scope, receive, sending)
            except BaseException as error:
                failed(span, type(error).__name__)
                raise


def name_by_route(method: str, route: str) -> None:
    """Name the request's server span by its route (``GET /documents/{id}``), once the
    route is known."""
    if not on():
        return
    span = trace.get_current_span()
    span.update_name(f"{method} {route}")
    span.set_attribute("http.route", route)
