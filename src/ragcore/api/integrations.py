"""/integrations: a data source as shown (its credentials masked), its sync, the records
stored for a user, and the bodies the kinds take (``ragcore.integrations.kinds``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any

import attrs

from ragcore.api.queries import MAX_STORED_ID
from ragcore.api.schema import described
from ragcore.errors import InvalidInput
from ragcore.integrations.kinds import (
    KINDS,
    MASK,
    MAX_INTERVAL_MINUTES,
    MAX_NAME_CHARS,
    SOURCE_TYPES,
    Kind,
    shown_credentials,
)
from ragcore.integrations.records import STATUSES, Status

MAX_RECORDS_PAGE = 500


@attrs.frozen
class SyncState:
    """The last sync (the one running, while status is syncing: its counts so far)."""

    status: Annotated[Status, described(enum=list(STATUSES))] = "never"
    started_at: datetime | None = None
    finished_at: datetime | None = None
    records_seen: Annotated[int, described("records read from the source")] = 0
    records_stored: Annotated[int, described("records stored (new or changed)")] = 0
    records_skipped: Annotated[int, described("records without a value at user_field")] = 0
    records_removed: Annotated[int, described("records gone from the source, removed")] = 0
    error: Annotated[str, described("why a sync failed or stopped (partial)")] = ""


@attrs.frozen
class Integration:
    """A data source. Its credentials are never shown: ``credentials`` names each field
    set, a secret one as ********."""

    id: int
    name: str
    source_type: Annotated[str, described(enum=list(SOURCE_TYPES))]
    credentials: Annotated[
        dict[str, str], described("each credential field set; secrets as " + MASK)
    ]
    user_field: str
    sync_interval_minutes: int | None
    sync: SyncState
    created_at: datetime
    updated_at: datetime


def shown(kind: Kind, fields: list[str], credentials: dict[str, str] | None) -> dict[str, str]:
    """The credentials as shown; every field masked when they could not be read."""
    if credentials is None:
        return {name: MASK for name in fields}
    return shown_credentials(kind, credentials)


@attrs.frozen
class Integrations:
    integrations: list[Integration]


@attrs.frozen
class TestResult:
    """The connection test: ok with what answered, or not ok with the source's reason."""

    ok: bool
    message: str


@attrs.frozen
class StoredRecord:
    id: Annotated[int, described("for paging: pass the last one as after=")]
    source_key: Annotated[str, described("the record's key at the source (or its hash)")]
    record: dict[str, Any]
    synced_at: datetime


@attrs.frozen
class Records:
    user: str
    records: list[StoredRecord]
    next_after: Annotated[
        int | None, described("pass as after= for the next page; null: no more")
    ] = None


@attrs.frozen
class RecordsQuery:
    user: Annotated[
        str, described("the user key: the value of the source's user_field (an e-mail address)")
    ] = ""
    after: Annotated[int, described(minimum=0, maximum=MAX_STORED_ID)] = 0
    limit: Annotated[int, described(minimum=1, maximum=MAX_RECORDS_PAGE)] = 100


def _field_schema(name: str) -> dict[str, Any]:
    meanings = sorted(
        {
            f"{kind.name}: {field.meaning}"
            for kind in KINDS.values()
            for field in kind.fields
            if field.name == name
        }
    )
    integer = any(
        field.integer for kind in KINDS.values() for field in kind.fields if field.name == name
    )
    schema: dict[str, Any] = {
        "type": ["string", "integer", "null"] if integer else ["string", "null"]
    }
    schema["description"] = "; ".join(meanings)
    return schema


def body_schema(*, new: bool) -> dict[str, Any]:
    """The JSON body of POST (``new``) or PATCH: the common fields and every kind's
    credential fields (which a kind takes: docs/api.md; others are refused by name)."""
    properties: dict[str, Any] = {
        "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
        "source_type": {"enum": list(SOURCE_TYPES)},
        "user_field": {
            "type": "string",
            "description": "the dotted path of the field naming a record's user "
            "(default: the kind's, e.g. email or properties.email)",
        },
        "sync_interval_minutes": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_INTERVAL_MINUTES,
            "description": "synced (as a job) once this long has passed since the last sync "
            "ended; null: only on demand",
        },
    }
    names = sorted({field.name for kind in KINDS.values() for field in kind.fields})
    for name in names:
        properties[name] = _field_schema(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if new:
        schema["required"] = ["name", "source_type"]
    return schema


UPLOAD_SCHEMA = {
    "type": "object",
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "the CSV file"},
        "name": {"type": "string", "minLength": 1},
        "source_type": {"enum": ["csv"]},
        "user_field": {"type": "string"},
        "sync_interval_minutes": {"type": "string"},
    },
    "required": ["file", "name"],
}


def check_upload(names: Iterable[str], files: int) -> None:
    """A CSV upload's form: its fields known, one file in ``file``."""
    unknown = sorted(set(names) - set(UPLOAD_SCHEMA["properties"]))
    if unknown:
        known = ", ".join(UPLOAD_SCHEMA["properties"])
        raise InvalidInput(unknown[0], f"unknown field; a CSV upload takes {known}")
    if files != 1:
        raise InvalidInput("file", "send one CSV file in the field file")


def upload_body(form: Mapping[str, str], content: str) -> dict[str, Any]:
    """A CSV upload as the JSON body it stands for: its form fields (an empty one is not
    given; the interval a number), the file's text as ``content``."""
    body: dict[str, Any] = {"source_type": "csv", **form, "content": content}
    if body["source_type"] != "csv":
        raise InvalidInput("source_type", "only csv data sources take a file")
    interval = body.get("sync_interval_minutes")
    if isinstance(interval, str) and not interval.strip():
        del body["sync_interval_minutes"]  # a form's empty field: not given
    elif isinstance(interval, str) and interval.strip().isdigit():
        body["sync_interval_minutes"] = int(interval)
    return body
