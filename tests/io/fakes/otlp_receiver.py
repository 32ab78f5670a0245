"""An OpenTelemetry collector's OTLP/HTTP receiver on 127.0.0.1: ``POST /v1/traces`` with
an ``ExportTraceServiceRequest`` in protobuf (``application/x-protobuf``, gzipped when
``Content-Encoding: gzip``), decoded with ``opentelemetry-proto`` as a collector decodes
it, answered 200 with an empty ``ExportTraceServiceResponse``. Serve it with the
``serve_fake`` fixture; ``spans()`` are every span received, flattened."""

from __future__ import annotations

import gzip
import http.server
import threading
from typing import Any

import attrs
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

PROTOBUF = "application/x-protobuf"


@attrs.frozen
class ReceivedSpan:
    """A span as the collector has it: ids in hex, attributes as plain values."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    start_ns: int
    end_ns: int
    resource: dict[str, Any]


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class _Discarding(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.batches += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", PROTOBUF)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def discarding_receiver() -> http.server.ThreadingHTTPServer:
    """For the benchmarks: an OTLP/HTTP receiver that takes every batch of spans and keeps
    none (a collector's cost is the collector's), in a thread of its own; ``batches``
    counts what it took. ``shutdown()`` stops it."""
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Discarding)
    sink.batches = 0  # type: ignore[attr-defined]
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    return sink


class OTLPReceiver(FakeServer):
    def __init__(self) -> None:
        super().__init__(api_key="", reply="")
        self.exports: list[ExportTraceServiceRequest] = []

    async def _answer(self, request: Recorded, send: Send) -> None:
        if request.method != "POST" or request.path != "/v1/traces":
            raise WireError(404, "no such route", {"error": "not found"}, None)
        if request.headers.get("content-type") != PROTOBUF:
            raise WireError(415, "not protobuf", {"error": "send application/x-protobuf"}, None)
        raw = request.raw
        if request.headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        export = ExportTraceServiceRequest()
        export.ParseFromString(raw)
        self.exports.append(export)
        await self._send_raw(send, PROTOBUF, ExportTraceServiceResponse().SerializeToString())

    def _failure(self, failure: Failure) -> WireError:
        return WireError(failure.status, "scripted", {}, failure.headers)

    def spans(self) -> list[ReceivedSpan]:
        found = []
        for export in self.exports:
            for resource_spans in export.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(
                            ReceivedSpan(
                                span.name,
                                span.trace_id.hex(),
                                span.span_id.hex(),
                                span.parent_span_id.hex(),
                                span.kind,
                                _attributes(span.attributes),
                                span.status.code,
                                span.start_time_unix_nano,
                                span.end_time_unix_nano,
                                resource,
                            )
                        )
        return found
