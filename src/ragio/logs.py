"""How log records are written to stderr: LOG_FORMAT=text (``time LEVEL logger: message``)
or json, one JSON object a line, for a log shipper (Loki, Elasticsearch, CloudWatch…).

A JSON line has ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger`` and
``message``; ``exception`` with the traceback when there is one; the ``extra=`` fields a
record was given; and for an access-log line the request's ``client``, ``method``,
``path`` (no query string), ``status``, ``bytes``, ``user_agent`` and ``duration_ms``.
Hypercorn hands its access lines every request header and environment variable as
arguments: only those named fields are taken from them, never the rest (the API key,
the providers' keys), and the message is made as in the text format.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
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
        return json.dumps(entry, ensure_ascii=False, default=str)


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
    return JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def use_format(log_format: str) -> None:
    """Write every record of the root logger's handlers in ``log_format`` from now on; in
    json, Python's warnings (a library's deprecation notice) become records too, so that
    they do not break the one-object-a-line stream."""
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter(log_format))
    logging.captureWarnings(log_format == "json")
