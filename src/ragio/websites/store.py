"""SQL for websites and the pages their crawls reached (migration 033). Every value is
bound as a parameter, never formatted."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg
from psycopg.types.json import Jsonb

from ragcore.websites.sites import Website


class NameTaken(Exception):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


@attrs.frozen
class StoredPage:
    """A page as the last crawl that reached it left it."""

    url: str
    document_id: int | None
    etag: str | None
    last_modified: str | None
    body_hash: str | None
    links: tuple[str, ...]
    outcome: str
    reason: str
    fetched_at: datetime


_SITE = (
    "id, name, start_urls, sitemaps, include, exclude, max_pages, max_depth, "
    "coalesce(crawl_every_minutes, 0), created_at, updated_at, last_crawl_at, last_crawl"
)
_PAGE = "url, document_id, etag, last_modified, body_hash, links, outcome, reason, fetched_at"
_FIELDS = (
    "name",
    "start_urls",
    "sitemaps",
    "include",
    "exclude",
    "max_pages",
    "max_depth",
    "crawl_every_minutes",
)


def _site(row: Sequence[Any]) -> Website:
    (id_, name, starts, sitemaps, include, exclude, pages, depth, every, created, updated,
     crawled, last) = row  # fmt: skip
    return Website(
        id_, name, tuple(starts), tuple(sitemaps), tuple(include), tuple(exclude), pages, depth,
        every, created, updated, crawled, last,
    )  # fmt: skip


def _values(fields: dict[str, Any]) -> list[Any]:
    values = []
    for name in _FIELDS:
        value = fields[name]
        if name == "crawl_every_minutes":
            value = value or None
        elif isinstance(value, tuple):
            value = list(value)
        values.append(value)
    return values


def create(conn: psycopg.Connection, fields: dict[str, Any], now: datetime) -> Website:
    try:
        with conn.transaction():
            row = conn.execute(
                f"""INSERT INTO websites ({", ".join(_FIELDS)}, created_at, updated_at)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                    RETURNING {_SITE}""",
                (*_values(fields), now, now),
            ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise NameTaken(fields["name"]) from None
    assert row is not None
    return _site(row)


def update(
    conn: psycopg.Connection, site_id: int, fields: dict[str, Any], now: datetime
) -> Website | None:
    sets = ", ".join(f"{name} = %s" for name in _FIELDS)
    try:
        with conn.transaction():
            row = conn.execute(
                f"UPDATE websites SET {sets}, updated_at = %s WHERE id = %s RETURNING {_SITE}",
                (*_values(fields), now, site_id),
            ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise NameTaken(fields["name"]) from None
    return None if row is None else _site(row)


def get(conn: psycopg.Connection, site_id: int) -> Website | None:
    row = conn.execute(f"SELECT {_SITE} FROM websites WHERE id = %s", (site_id,)).fetchone()
    return None if row is None else _site(row)


def by_name(conn: psycopg.Connection, name: str) -> Website | None:
    row = conn.execute(f"SELECT {_SITE} FROM websites WHERE name = %s", (name,)).fetchone()
    return None if row is None else _site(row)


def list_sites(conn: psycopg.Connection) -> list[Website]:
    return [_site(row) for row in conn.execute(f"SELECT {_SITE} FROM websites ORDER BY id")]


def due(conn: psycopg.Connection, now: datetime) -> list[Website]:
    """The websites whose crawl_every_minutes has passed since their last crawl ended."""
    rows = conn.execute(
        f"""SELECT {_SITE} FROM websites
            WHERE crawl_every_minutes IS NOT NULL
              AND (last_crawl_at IS NULL
                   OR last_crawl_at + make_interval(mins => crawl_every_minutes) <= %s)
            ORDER BY id""",
        (now,),
    )
    return [_site(row) for row in rows]


def delete(conn: psycopg.Connection, site_id: int) -> list[int] | None:
    """Delete the website and its pages' rows; the ids of its pages' documents (for the
    caller to forget), or None when there is no such website."""
    with conn.transaction():
        documents = [
            row[0]
            for row in conn.execute(
                """SELECT DISTINCT document_id FROM website_pages
                   WHERE website_id = %s AND document_id IS NOT NULL""",
                (site_id,),
            )
        ]
        gone = conn.execute("DELETE FROM websites WHERE id = %s", (site_id,)).rowcount
    return documents if gone else None


def pages_of(conn: psycopg.Connection, site_id: int) -> dict[str, StoredPage]:
    rows = conn.execute(
        f"SELECT {_PAGE} FROM website_pages WHERE website_id = %s", (site_id,)
    ).fetchall()
    return {row[0]: _page(row) for row in rows}


def _page(row: Sequence[Any]) -> StoredPage:
    url, document_id, etag, modified, body_hash, links, *rest = row
    return StoredPage(url, document_id, etag, modified, body_hash, tuple(links), *rest)


def page_list(
    conn: psycopg.Connection, site_id: int, after: str, limit: int, outcome: str | None
) -> tuple[list[StoredPage], int]:
    """A page of the website's pages by address (after ``after``), and how many it has
    (of ``outcome``, when given)."""
    rows = conn.execute(
        f"""SELECT {_PAGE} FROM website_pages
            WHERE website_id = %s AND url > %s AND (%s::text IS NULL OR outcome = %s)
            ORDER BY url LIMIT %s""",
        (site_id, after, outcome, outcome, limit),
    ).fetchall()
    total = conn.execute(
        """SELECT count(*) FROM website_pages
           WHERE website_id = %s AND (%s::text IS NULL OR outcome = %s)""",
        (site_id, outcome, outcome),
    ).fetchone()
    return [_page(row) for row in rows], int(total[0]) if total else 0


def save_page(conn: psycopg.Connection, site_id: int, page: StoredPage) -> None:
    conn.execute(
        f"""INSERT INTO website_pages (website_id, {_PAGE})
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
            ON CONFLICT (website_id, url) DO UPDATE
            SET document_id = excluded.document_id, etag = excluded.etag,
                last_modified = excluded.last_modified, body_hash = excluded.body_hash,
                links = excluded.links,
                outcome = excluded.outcome, reason = excluded.reason,
                fetched_at = excluded.fetched_at""",
        (
            site_id,
            page.url,
            page.document_id,
            page.etag,
            page.last_modified,
            page.body_hash,
            list(page.links),
            page.outcome,
            page.reason,
            page.fetched_at,
        ),  # fmt: skip
    )


def drop_pages(conn: psycopg.Connection, site_id: int, urls: Sequence[str]) -> None:
    conn.execute(
        "DELETE FROM website_pages WHERE website_id = %s AND url = ANY(%s)",
        (site_id, list(urls)),
    )


def finish(conn: psycopg.Connection, site_id: int, result: dict[str, Any], now: datetime) -> None:
    conn.execute(
        "UPDATE websites SET last_crawl_at = %s, last_crawl = %s WHERE id = %s",
        (now, Jsonb(result), site_id),
    )
