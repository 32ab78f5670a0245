"""API keys in PostgreSQL (migration 034; the rules are ``ragcore.api.keys``): made,
listed, changed, revoked, and each request's key found and counted against its
per-minute limit. Every replica reads the same rows, so a revocation, an expiry and a
limit hold across them at once. Every value is bound as a parameter, never formatted.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg

from ragcore.api.keys import (
    KEY_PREFIX,
    RATE_WINDOW,
    SHOWN_CHARS,
    ApiKey,
    KeyCreated,
    KeyPatch,
    KeyUsage,
    expiry,
    key_hash,
    window_start,
)
from ragcore.usage import day_and_month


class NameTaken(Exception):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


@attrs.frozen
class Holder:
    """Who a request comes from: the owner's key (``id`` None) or a key made with /keys."""

    id: int | None
    name: str
    scopes: tuple[str, ...]
    tokens_per_day: int = 0
    requests_per_minute: int = 0
    #: requests this minute still allowed after this one (with requests_per_minute)
    requests_left: int = 0


OWNER = Holder(None, "SERVICE_API_KEY", ("admin",))
#: the name of the key made with /keys that the running request came with (None: none),
#: for the metrics of the provider calls it makes
ASKING_KEY: ContextVar[str | None] = ContextVar("ragchat_asking_key", default=None)


@attrs.frozen
class Refused:
    """A key that exists but may not be used now: ``why`` is the 401's detail."""

    name: str
    why: str


@attrs.frozen
class Limited:
    """A key over its requests a minute."""

    name: str
    limit: int


_COLUMNS = (
    "id, name, shown, scopes, requests_per_minute, tokens_per_day, created_at, expires_at, "
    "revoked_at, last_used_at"
)


def _key(row: Sequence[Any], usage: KeyUsage | None = None) -> ApiKey:
    id_, name, shown, scopes, per_minute, per_day, created, expires, revoked, used = row
    return ApiKey(
        id_, name, shown, tuple(scopes), per_minute, per_day, created, expires, revoked, used,
        usage or KeyUsage(),
    )  # fmt: skip


def new_key() -> str:
    """A key: ``rck_`` and 256 random bits in base64url (43 characters)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def create(conn: psycopg.Connection, fields: KeyPatch, now: datetime) -> KeyCreated:
    key = new_key()
    try:
        with conn.transaction():
            row = conn.execute(
                f"""INSERT INTO api_keys (name, shown, hash, scopes, requests_per_minute,
                                          tokens_per_day, created_at, expires_at)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}""",
                (
                    fields.name,
                    key[:SHOWN_CHARS],
                    key_hash(key),
                    list(fields.scopes or ()),
                    fields.requests_per_minute or 0,
                    fields.tokens_per_day or 0,
                    now,
                    expiry(now, fields),
                ),
            ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise NameTaken(str(fields.name)) from None
    assert row is not None  # an INSERT … RETURNING returns its row
    return KeyCreated(**attrs.asdict(_key(row), recurse=False), key=key)


def _usage(conn: psycopg.Connection, ids: list[int], now: datetime) -> dict[int, KeyUsage]:
    day, month = day_and_month(now)
    rows = conn.execute(
        """SELECT api_key_id,
                  coalesce(sum(prompt_tokens + completion_tokens) FILTER (WHERE at >= %s), 0),
                  coalesce(sum(prompt_tokens + completion_tokens), 0)
             FROM usage_records
            WHERE api_key_id = ANY(%s) AND at >= %s AND state = 'settled'
            GROUP BY api_key_id""",
        (day, ids, month),
    ).fetchall()
    return {key_id: KeyUsage(int(today), int(month_)) for key_id, today, month_ in rows}


def list_keys(conn: psycopg.Connection, now: datetime) -> list[ApiKey]:
    """Every key, in use first, then revoked; newest first within each."""
    with conn.transaction():
        rows = conn.execute(
            f"""SELECT {_COLUMNS} FROM api_keys
                 ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC"""
        ).fetchall()
        usage = _usage(conn, [row[0] for row in rows], now)
    return [_key(row, usage.get(row[0])) for row in rows]


def get(conn: psycopg.Connection, key_id: int, now: datetime) -> ApiKey | None:
    with conn.transaction():
        row = conn.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE id = %s", (key_id,)).fetchone()
        if row is None:
            return None
        usage = _usage(conn, [key_id], now)
    return _key(row, usage.get(key_id))


def update(conn: psycopg.Connection, key_id: int, patch: KeyPatch, now: datetime) -> ApiKey | None:
    """The key with ``patch`` applied; None when there is no such key. A revoked key
    cannot be changed (it is as it was when revoked)."""
    given = {k: v for k, v in attrs.asdict(patch, recurse=False).items() if v is not None}
    given.pop("expires_in_days", None)
    if (expires := expiry(now, patch)) is not None:
        given["expires_at"] = expires
    if "scopes" in given:
        given["scopes"] = list(given["scopes"])
    names = list(given)
    sets = ", ".join(f"{name} = %s" for name in names) or "name = name"
    try:
        with conn.transaction():
            row = conn.execute(
                f"UPDATE api_keys SET {sets} WHERE id = %s AND revoked_at IS NULL RETURNING id",
                (*given.values(), key_id),
            ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise NameTaken(str(patch.name)) from None
    if row is None:
        return None
    return get(conn, key_id, now)


def revoke(conn: psycopg.Connection, key_id: int, now: datetime) -> bool:
    """Revoke the key (at once, for every replica); False when there is no such key.
    Revoking a revoked key changes nothing."""
    row = conn.execute(
        """UPDATE api_keys SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s
           RETURNING id""",
        (now, key_id),
    ).fetchone()
    return row is not None


#: last_used_at is written at most this often a key (every request would contend for
#: its row)
USED_EVERY = timedelta(seconds=10)


def admit(conn: psycopg.Connection, given: str, now: datetime) -> Holder | Refused | Limited | None:
    """The holder of ``given``, counted against its requests a minute; None when no key
    is ``given``; Refused when it was revoked or expired; Limited when over its rate.

    The minute's count is raised only while under the limit (a conditional upsert, one
    row a key and minute): concurrent requests in any replica admit exactly the limit."""
    row = conn.execute(
        """SELECT id, name, scopes, requests_per_minute, tokens_per_day, expires_at,
                  revoked_at, last_used_at
             FROM api_keys WHERE hash = %s""",
        (key_hash(given),),
    ).fetchone()
    if row is None:
        return None
    key_id, name, scopes, per_minute, per_day, expires, revoked, used = row
    if revoked is not None:
        return Refused(name, f"this API key ({name}) was revoked")
    if expires is not None and expires <= now:
        return Refused(name, f"this API key ({name}) expired at {expires.isoformat()}")
    left = 0
    if per_minute:
        minute = window_start(now)
        counted = conn.execute(
            """INSERT INTO api_key_minutes AS m (key_id, minute, requests) VALUES (%s, %s, 1)
               ON CONFLICT (key_id, minute) DO UPDATE SET requests = m.requests + 1
                WHERE m.requests < %s
               RETURNING requests""",
            (key_id, minute, per_minute),
        ).fetchone()
        if counted is None:
            return Limited(name, per_minute)
        left = per_minute - counted[0]
        if counted[0] == 1:  # the minute's first request clears the key's older minutes
            conn.execute(
                "DELETE FROM api_key_minutes WHERE key_id = %s AND minute < %s",
                (key_id, minute - RATE_WINDOW),
            )
    if used is None or now - used >= USED_EVERY:
        conn.execute("UPDATE api_keys SET last_used_at = %s WHERE id = %s", (now, key_id))
    return Holder(key_id, name, tuple(scopes), int(per_day), per_minute, left)


def usage_by_key(conn: psycopg.Connection, since: datetime) -> list[dict[str, Any]]:
    """Settled model calls and tokens by key since ``since``; the owner's key (and
    channels no key asks on: Telegram, calls…) as key null."""
    rows = conn.execute(
        """SELECT u.api_key_id, k.name, count(*), sum(u.prompt_tokens),
                  sum(u.completion_tokens), bool_or(u.estimated)
             FROM usage_records u LEFT JOIN api_keys k ON k.id = u.api_key_id
            WHERE u.state = 'settled' AND u.at >= %s
            GROUP BY u.api_key_id, k.name ORDER BY k.name NULLS FIRST""",
        (since,),
    ).fetchall()
    return [
        {
            "key_id": key_id,
            "key": name,
            "calls": calls,
            "prompt_tokens": int(prompt),
            "completion_tokens": int(completion),
            "total_tokens": int(prompt) + int(completion),
            "includes_estimates": estimated,
        }
        for key_id, name, calls, prompt, completion, estimated in rows
    ]
