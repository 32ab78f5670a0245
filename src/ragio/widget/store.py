"""SQL for the widget's sites, its token key and the quotas' counters. Every value is
bound as a parameter, never formatted."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg import errors as pg_errors

from ragcore.widget.quotas import Counter
from ragcore.widget.sites import PUBLIC_ID_ALPHABET, PUBLIC_ID_PREFIX, Site, SitePatch

_SITE = """id, public_id, name, allowed_origins, role, greeting, colour, position,
           visitor_questions_per_day, ip_questions_per_hour, ip_questions_per_day,
           tokens_per_day, enabled, created_at, updated_at"""
#: the counters of windows that ended this long ago are deleted
COUNTERS_KEPT = timedelta(days=2)


class NameTaken(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@attrs.frozen
class PublicSite:
    """A site as the visitor's routes need it: the site, what verifies its customers and
    its visitors' tokens."""

    site: Site
    identity_secret: str
    sessions_generation: int
    token_key: bytes


def new_public_id() -> str:
    return PUBLIC_ID_PREFIX + "".join(secrets.choice(PUBLIC_ID_ALPHABET) for _ in range(16))


def new_identity_secret() -> str:
    return secrets.token_urlsafe(32)


def _site(row: Sequence[Any]) -> Site:
    values = list(row)
    values[3] = list(values[3])
    return Site(*values)


def list_sites(conn: psycopg.Connection) -> list[Site]:
    rows = conn.execute(f"SELECT {_SITE} FROM widget_sites ORDER BY id").fetchall()
    return [_site(row) for row in rows]


def get_site(conn: psycopg.Connection, site_id: int) -> Site | None:
    row = conn.execute(f"SELECT {_SITE} FROM widget_sites WHERE id = %s", (site_id,)).fetchone()
    return _site(row) if row else None


def create_site(
    conn: psycopg.Connection, fields: SitePatch, identity_secret: str, now: datetime
) -> Site:
    """The new site (its public id made here); NameTaken when another site has its name."""
    given = fields.given()
    if given.get("role") == "":
        given["role"] = None
    if "allowed_origins" in given:
        given["allowed_origins"] = list(given["allowed_origins"])
    columns = ["public_id", "identity_secret", "created_at", "updated_at", *given]
    values = [new_public_id(), identity_secret, now, now, *given.values()]
    try:
        with conn.transaction():
            row = conn.execute(
                f"""INSERT INTO widget_sites ({", ".join(columns)})
                    VALUES ({", ".join(["%s"] * len(values))}) RETURNING {_SITE}""",
                values,
            ).fetchone()
    except pg_errors.UniqueViolation as taken:
        if "name" in str(taken.diag.constraint_name or ""):
            raise NameTaken(str(given.get("name"))) from None
        raise
    assert row is not None
    return _site(row)


def update_site(
    conn: psycopg.Connection, site_id: int, fields: SitePatch, now: datetime
) -> Site | None:
    """The site with ``fields`` changed; None when there is none; NameTaken."""
    given = fields.given()
    if given.get("role") == "":
        given["role"] = None
    if "allowed_origins" in given:
        given["allowed_origins"] = list(given["allowed_origins"])
    sets = [f"{column} = %s" for column in given]  # the columns are SitePatch's own names
    try:
        with conn.transaction():
            row = conn.execute(
                f"""UPDATE widget_sites SET {", ".join([*sets, "updated_at = %s"])}
                     WHERE id = %s RETURNING {_SITE}""",
                [*given.values(), now, site_id],
            ).fetchone()
    except pg_errors.UniqueViolation:
        raise NameTaken(str(given.get("name"))) from None
    return _site(row) if row else None


def delete_site(conn: psycopg.Connection, site_id: int) -> bool:
    return conn.execute("DELETE FROM widget_sites WHERE id = %s", (site_id,)).rowcount > 0


def set_identity_secret(conn: psycopg.Connection, site_id: int, secret: str, now: datetime) -> bool:
    return (
        conn.execute(
            "UPDATE widget_sites SET identity_secret = %s, updated_at = %s WHERE id = %s",
            (secret, now, site_id),
        ).rowcount
        > 0
    )


def revoke_sessions(conn: psycopg.Connection, site_id: int, now: datetime) -> bool:
    """Every visitor token of the site issued until ``now`` is refused from now on."""
    return (
        conn.execute(
            """UPDATE widget_sites
                  SET sessions_generation = sessions_generation + 1, updated_at = %s
                WHERE id = %s""",
            (now, site_id),
        ).rowcount
        > 0
    )


def origin_allowed(conn: psycopg.Connection, origin: str) -> bool:
    """Whether an enabled site allows ``origin`` (a preflight names no site)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM widget_sites WHERE enabled AND %s = ANY(allowed_origins))",
        (origin,),
    ).fetchone()
    return bool(row and row[0])


def token_key(conn: psycopg.Connection) -> bytes:
    """The key visitor tokens are signed with, made by the first process that asks."""
    row = conn.execute("SELECT secret FROM widget_keys WHERE id = 1").fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO widget_keys (id, secret) VALUES (1, %s) ON CONFLICT (id) DO NOTHING",
            (secrets.token_bytes(32),),
        )
        row = conn.execute("SELECT secret FROM widget_keys WHERE id = 1").fetchone()
    assert row is not None
    return bytes(row[0])


def public_site(conn: psycopg.Connection, public_id: str) -> PublicSite | None:
    """The site a page names, with its secrets and the token key (read on every visitor
    request: a site disabled or changed is so at once, on every replica)."""
    row = conn.execute(
        f"""SELECT {_SITE}, identity_secret, sessions_generation FROM widget_sites
             WHERE public_id = %s""",
        (public_id,),
    ).fetchone()
    if row is None:
        return None
    return PublicSite(_site(row[:-2]), row[-2], row[-1], token_key(conn))


def take_question(
    conn: psycopg.Connection,
    site_id: int,
    counters: Sequence[Counter],
    tokens: Counter | None,
    reserve: int,
    now: datetime,
) -> Counter | None:
    """Count a question in every counter, each while under its limit, and reserve
    ``reserve`` of the site's tokens of the day while they fit, in one transaction: all
    or none. The counter that refused it (nothing counted), or None (counted)."""
    refused: Counter | None = None
    taken = [(counter, 1) for counter in counters]
    if tokens is not None:
        taken.append((tokens, reserve))
    with conn.transaction():
        conn.execute("DELETE FROM widget_counters WHERE window_start < %s", (now - COUNTERS_KEPT,))
        for counter, amount in taken:
            row = None
            if amount <= counter.limit:
                row = conn.execute(
                    """INSERT INTO widget_counters AS c
                           (site_id, subject, window_kind, window_start, count)
                       VALUES (%s, %s, %s, %s, %s)
                       ON CONFLICT (site_id, subject, window_kind, window_start)
                       DO UPDATE SET count = c.count + excluded.count
                       WHERE c.count + excluded.count <= %s
                       RETURNING count""",
                    (
                        site_id,
                        counter.subject,
                        counter.window,
                        counter.start,
                        amount,
                        counter.limit,
                    ),
                ).fetchone()
            if row is None:
                refused = counter
                raise psycopg.Rollback()  # nothing of this question is counted
    return refused


def add_tokens(conn: psycopg.Connection, site_id: int, counter: Counter, tokens: int) -> None:
    """``tokens`` added to the site's day: what an answer spent beyond (or, negative,
    short of) what its question reserved."""
    conn.execute(
        """INSERT INTO widget_counters AS c (site_id, subject, window_kind, window_start, count)
           VALUES (%s, %s, %s, %s, %s)
           ON CONFLICT (site_id, subject, window_kind, window_start)
           DO UPDATE SET count = c.count + excluded.count""",
        (site_id, counter.subject, counter.window, counter.start, tokens),
    )
