"""The rules of syncing a data source's records: whose a record is (its user key), which
record it is at the source (its source key), what a page keeps, and how a sync ended.

A record is a JSON-shaped dict as a connector yields it. Its user key is the value at
the source's ``user_field`` (a dotted path, ``properties.email``), trimmed, lower-cased
when it looks like an e-mail address; a record without one is skipped and counted. Its
source key is the field that identifies it at the source (per kind), or else the hash of
its canonical JSON, so an unchanged record keeps its key from one sync to the next.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import attrs

from ragcore.integrations.kinds import KINDS, with_defaults

Status = Literal["never", "syncing", "succeeded", "partial", "failed"]
STATUSES: tuple[Status, ...] = ("never", "syncing", "succeeded", "partial", "failed")
MAX_KEY_CHARS = 500  # a user key or a source key longer than this is cut (and hashed)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
#: the field that identifies a record at the source, by kind (the SQL kinds: key_column)
ID_FIELDS = {
    "mongodb": "_id",
    "hubspot": "id",
    "shopify": "id",
    "stripe": "id",
    "salesforce": "Id",
    "rest_api": "id",  # when the API's records have one; else the hash
}
SQL_KINDS = ("mysql", "postgresql")
#: a sync still marked ``syncing`` with no progress for this long was cut off (a crash, a
#: stop): another may claim the source. Each page (one request of at most
#: INTEGRATIONS_TIMEOUT_SECONDS, then its upsert) moves the heartbeat.
MIN_STALE = timedelta(minutes=10)


def user_key(record: Mapping[str, Any], user_field: str) -> str | None:
    """The user a record belongs to: the value at the dotted path ``user_field``, trimmed
    (an e-mail-like one lower-cased); None when absent, empty, or not text or a number."""
    value: Any = record
    for part in user_field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            value = record.get(user_field) if isinstance(record, Mapping) else None
            break
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()
    if not text:
        return None
    if _EMAIL.match(text):
        text = text.lower()
    return text[:MAX_KEY_CHARS]


def json_safe(value: Any) -> Any:
    """``value`` as JSON PostgreSQL stores: non-JSON values (dates, decimals, object
    ids, bytes) and non-finite numbers as their text, NUL characters dropped (jsonb
    refuses them), keys as text."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, Mapping):
        return {str(k).replace("\x00", ""): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return str(value).replace("\x00", "")


def canonical_json(record: Mapping[str, Any]) -> str:
    """``record`` as one canonical JSON text (``json_safe``): keys sorted, no spaces."""
    return json.dumps(json_safe(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_hash(record: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(record).encode("utf-8")).hexdigest()


def id_field(source_type: str, credentials: Mapping[str, str]) -> str | None:
    """The field that identifies a record of this kind, None when its records are told
    apart by their content (sheets, csv)."""
    if source_type in SQL_KINDS:
        return with_defaults(KINDS[source_type], credentials)["key_column"]
    return ID_FIELDS.get(source_type)


def source_key(record: Mapping[str, Any], id_name: str | None) -> str:
    """Which record this is at the source: its ``id_name`` field when it has a value,
    else the hash of its canonical JSON."""
    if id_name is not None:
        value = record.get(id_name)
        if value is not None and not isinstance(value, dict | list) and str(value) != "":
            text = str(value)
            return text if len(text) <= MAX_KEY_CHARS else record_hash({"id": text})
    return record_hash(record)


@attrs.frozen
class Row:
    """A record ready to store: its user key, its key at the source, and itself as
    canonical JSON text (made once: stored as it is)."""

    user_key: str
    source_key: str
    text: str

    @property
    def record(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.text)
        return loaded


@attrs.frozen
class Page:
    rows: tuple[Row, ...]
    skipped: int  # records without a user key


def prepare_page(
    records: Iterable[Mapping[str, Any]], user_field: str, id_name: str | None
) -> Page:
    """The rows a page stores (a record seen twice in a page: its last form) and how many
    records had no user key."""
    rows: dict[str, Row] = {}
    skipped = 0
    for record in records:
        user = user_key(record, user_field)
        if user is None:
            skipped += 1
            continue
        key = source_key(record, id_name)
        rows.pop(key, None)
        rows[key] = Row(user, key, canonical_json(record))
    return Page(tuple(rows.values()), skipped)


@attrs.frozen
class Progress:
    """A sync's counts so far."""

    seen: int = 0  # records read from the source
    stored: int = 0  # records stored (inserted or updated)
    skipped: int = 0  # records without a user key


def within_bound(progress: Progress, page: int, max_records: int) -> int:
    """How many records of a page of ``page`` records may still be read under
    ``max_records`` (INTEGRATIONS_SYNC_MAX_RECORDS)."""
    return max(0, min(page, max_records - progress.seen))


@attrs.frozen
class Outcome:
    """How a sync ended: its status, the reason (partial or failed), whether the records
    not seen this time are removed (only after a complete read)."""

    status: Status
    error: str
    remove_unseen: bool


def outcome(*, complete: bool, failure: str | None, max_records: int) -> Outcome:
    """A sync's end: failed with the source's reason; partial when it stopped at the
    bound (nothing removed: the rest was not read); succeeded after a complete read."""
    if failure is not None:
        return Outcome("failed", failure, False)
    if not complete:
        reason = (
            f"stopped at INTEGRATIONS_SYNC_MAX_RECORDS ({max_records}) records; the rest was "
            "not read and nothing was removed"
        )
        return Outcome("partial", reason, False)
    return Outcome("succeeded", "", True)


def cancelled_outcome(progress: Progress) -> Outcome:
    """A sync whose job was cancelled (DELETE /jobs/{id}) between two pages: partial, the
    pages stored before it stay, nothing removed (the rest was not read)."""
    reason = (
        f"cancelled (DELETE /jobs/{{id}}) after {progress.stored} records were stored; the "
        "rest was not read and nothing was removed"
    )
    return Outcome("partial", reason, False)


def stopped_sync(progress: Progress) -> dict[str, Any]:
    """What a cancelled sync job had done (its result after ``"stopped"``): the pages
    stored before it stopped stay."""
    return {
        "status": "partial",
        "records_seen": progress.seen,
        "records_stored": progress.stored,
        "records_skipped": progress.skipped,
    }


def stale_after(timeout_seconds: float) -> timedelta:
    """How long a ``syncing`` source may go without progress before it counts as cut
    off: ten minutes, or four requests' time when that is longer."""
    return max(MIN_STALE, timedelta(seconds=4 * timeout_seconds))


def page_wait(timeout_seconds: float) -> float:
    """The seconds a sync waits for its source's next page before it fails: half the
    stale window, so a live sync never looks cut off."""
    return stale_after(timeout_seconds).total_seconds() / 2


def is_stale(heartbeat: datetime | None, now: datetime, timeout_seconds: float) -> bool:
    return heartbeat is None or now - heartbeat >= stale_after(timeout_seconds)


def column_names(header: Sequence[str]) -> list[str]:
    """A table's header row as record field names: trimmed, a blank one as
    ``column_N``, a repeated one with ``_2``, ``_3``… added."""
    names: list[str] = []
    for number, cell in enumerate(header, start=1):
        name = cell.strip() or f"column_{number}"
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return names


def table_records(rows: Sequence[Sequence[str]]) -> list[dict[str, str]]:
    """A table's rows (the first names the columns) as records: a short row's missing
    cells empty, a long row's extra cells as ``column_N``."""
    if not rows:
        return []
    names = column_names(rows[0])
    records = []
    for row in rows[1:]:
        width = max(len(names), len(row))
        extra = [f"column_{n}" for n in range(len(names) + 1, width + 1)]
        keys = names + extra
        records.append({key: (row[i] if i < len(row) else "") for i, key in enumerate(keys)})
    return records
