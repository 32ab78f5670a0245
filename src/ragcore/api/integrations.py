"""/integrations: a data source as shown (its credentials masked), its sync, the records
stored for a user, and the bodies the kinds take (``ragcore.integrations.kinds``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any

import attrs

from ragcore.api.queries import MAX_STORED_ID
from ragcore.errors import InvalidInput
from ragcore.inputs import NOT_BLANK, SPACE, number_pattern
from ragcore.integrations.kinds import (
    COMMON,
    KINDS,
    MASK,
    MAX_INTERVAL_MINUTES,
    MAX_NAME_CHARS,
    MAX_PORT,
    MAX_USER_FIELD_CHARS,
    SOURCE_TYPES,
    Kind,
    shown_credentials,
)
from ragcore.integrations.records import STATUSES, Status
from ragcore.schema import described

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


@attrs.frozen
class CredentialField:
    """One field a kind of data source takes, as a form asks for it."""

    name: str
    meaning: Annotated[str, described("what it holds, in words")]
    secret: Annotated[bool, described("never shown once saved: GET shows it as " + MASK)]
    default: Annotated[str | None, described("what applies when it is not given; null: none")]
    integer: Annotated[bool, described("a whole number (a port), sent as a number or digits")]
    max_chars: Annotated[int, described("the longest value taken")]


@attrs.frozen
class IntegrationKind:
    """A kind of data source: what POST /integrations takes with its source_type."""

    source_type: str
    description: str
    fields: Annotated[
        list[CredentialField],
        described("its own fields, beside name, source_type, user_field, sync_interval_minutes"),
    ]
    required: Annotated[
        list[list[str]],
        described(
            "the alternatives of its required fields: every field of one of them must be given"
        ),
    ]
    user_field: Annotated[str, described("user_field when it is not given")]


@attrs.frozen
class IntegrationKinds:
    kinds: Annotated[list[IntegrationKind], described("in the order of source_type's enum")]


def kind_described(kind: Kind) -> IntegrationKind:
    """The kind as GET /integrations/kinds describes it."""
    fields = [
        CredentialField(f.name, f.meaning, f.secret, f.default, f.integer, f.max_chars)
        for f in kind.fields
    ]
    required = [list(option) for option in kind.required]
    return IntegrationKind(kind.name, kind.description, fields, required, kind.user_field)


def kinds_described() -> IntegrationKinds:
    """Every kind of data source (``KINDS``), described for a client's forms."""
    return IntegrationKinds([kind_described(kind) for kind in KINDS.values()])


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
        str,
        described(
            "the user key: the value of the source's user_field (an e-mail address)",
            pattern=NOT_BLANK,
        ),
    ]
    after: Annotated[int, described(minimum=0, maximum=MAX_STORED_ID)] = 0
    limit: Annotated[int, described(minimum=1, maximum=MAX_RECORDS_PAGE)] = 100


USER_FIELD = (
    "the dotted path of the field naming a record's user (default: the kind's, e.g. email "
    "or properties.email)"
)
INTERVAL = (
    "synced (as a job) once this long has passed since the last sync ended; null: only on demand"
)
#: ``sync_interval_minutes`` as a form field: digits of 1 to MAX_INTERVAL_MINUTES, or empty
INTERVAL_TEXT = f"^[{SPACE}]*(?:0*{number_pattern(1, MAX_INTERVAL_MINUTES)})?[{SPACE}]*$"


def _field(name: str) -> dict[str, Any]:
    """A credential field's schema, as ``ragcore.integrations.kinds`` checks it in every
    kind that has it: text (a port: digits, or a whole number), or null to remove it.
    What it holds is said by each kind (``_kind``): fields alike share one schema."""
    fields = [field for kind in KINDS.values() for field in kind.fields if field.name == name]
    if any(field.integer for field in fields):
        return {
            "type": ["string", "integer", "null"],
            "minimum": 1,
            "maximum": MAX_PORT,
            "pattern": f"^[{SPACE}]*0*{number_pattern(1, MAX_PORT)}[{SPACE}]*$",
        }
    return {
        "type": ["string", "null"],
        "maxLength": max(field.max_chars for field in fields),
        "pattern": NOT_BLANK,
    }


def _kind(kind: Kind, *, new: bool) -> dict[str, Any]:
    """What one kind adds to the body: its source_type, only its own fields, and (``new``)
    one of the alternatives of its required fields, each given (not null); a field every
    alternative needs is never removed (null)."""
    fields = [field.name for field in kind.fields]
    limits: dict[str, dict[str, Any]] = {
        field.name: {"maxLength": field.max_chars}
        for field in kind.fields
        if not field.integer and field.max_chars < _field(field.name)["maxLength"]
    }
    for field in kind.fields:
        if field.pattern is not None:  # a form judged as it is saved (``settings``)
            limits[field.name] = {**limits.get(field.name, {}), "pattern": field.pattern}
    meanings = "; ".join(f"{field.name}: {field.meaning}" for field in kind.fields)
    schema: dict[str, Any] = {
        "title": kind.name,
        "description": f"{kind.description}. {meanings}",
        "properties": {"source_type": {"const": kind.name}, **limits},
        "propertyNames": {"enum": [*COMMON, *fields]},
    }
    if new:
        schema["anyOf"] = [
            {
                "required": list(option),
                "properties": {name: {"type": ["string", "integer"]} for name in option},
            }
            for option in kind.required
        ]
    else:
        needed = set.intersection(*(set(option) for option in kind.required))
        for name in sorted(needed):
            schema["properties"][name] = {**limits.get(name, {}), "type": "string"}
    return schema


#: a data source's name and user_field, whatever the form that sends them
NAME_SCHEMA: dict[str, Any] = {"type": "string", "maxLength": MAX_NAME_CHARS, "pattern": NOT_BLANK}
USER_FIELD_SCHEMA: dict[str, Any] = {
    "type": "string",
    "maxLength": MAX_USER_FIELD_CHARS,
    "pattern": NOT_BLANK,
    "description": USER_FIELD,
}


def body_schema(*, new: bool) -> dict[str, Any]:
    """The JSON body of POST (``new``) or PATCH: the common fields, and those of one kind,
    by its source_type (required to create). A PATCH changes a source of its own kind: a
    field of another kind, or another source_type, is refused (422), and a field removed
    (null) must leave one of the alternatives of its required fields whole."""
    names = sorted({field.name for kind in KINDS.values() for field in kind.fields})
    properties: dict[str, Any] = {
        "name": NAME_SCHEMA,
        "source_type": {"enum": list(SOURCE_TYPES)},
        "user_field": USER_FIELD_SCHEMA,
        "sync_interval_minutes": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_INTERVAL_MINUTES,
            "description": INTERVAL,
        },
        **{name: _field(name) for name in names},
    }
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "anyOf": [_kind(kind, new=new) for kind in KINDS.values()],
    }
    if new:
        schema["required"] = ["name", "source_type"]
    return schema


UPLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file": {
            "type": "string",
            "format": "binary",
            "description": "the CSV file, as text; its first row names the columns",
        },
        "name": NAME_SCHEMA,
        "source_type": {"enum": ["csv"]},
        "user_field": USER_FIELD_SCHEMA,
        "sync_interval_minutes": {
            "type": "string",
            "pattern": INTERVAL_TEXT,
            "description": INTERVAL + "; empty: not given",
        },
    },
    "required": ["file", "name"],
    "additionalProperties": False,
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
    elif isinstance(interval, str) and interval.strip().isascii() and interval.strip().isdigit():
        body["sync_interval_minutes"] = int(interval.strip())
    return body
