"""A website as the owner sets it (``/websites``): where the crawl starts (start URLs
and/or sitemaps), which pages it keeps (include and exclude patterns), how far it goes (a
page limit and a depth) and how often it runs again.

A pattern is matched against a page's whole address when it holds ``://``, else against
its path and query; ``*`` stands for any characters (``/blog/*``, ``*.pdf``,
``https://shop.example.com/help/*``). A page is kept when it matches an include pattern
(or there is none) and no exclude pattern. A start URL is fetched for its links even
when the patterns leave it out; it is then not stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

import attrs

from ragcore.converter import listing, structure_body, unless_sent
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import http_url_pattern, whole_number
from ragcore.schema import described, text
from ragcore.websites.pages import MAX_URL_CHARS, normal_url

MAX_NAME_CHARS = 100
MAX_URLS = 20
MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 500
DEFAULT_MAX_PAGES = 500
MAX_PAGES = 100_000
DEFAULT_MAX_DEPTH = 5
MAX_DEPTH = 50
#: the longest interval between scheduled crawls (a year)
MAX_EVERY_MINUTES = 525_600
READ_ONLY_FIELDS = ("id", "created_at", "updated_at", "last_crawl_at", "last_crawl", "pages")
URL_PATTERN = http_url_pattern()
_URL = re.compile(URL_PATTERN)


@attrs.frozen
class Website:
    """A website as stored."""

    id: int
    name: str
    start_urls: tuple[str, ...]
    sitemaps: tuple[str, ...]
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    max_pages: int
    max_depth: int
    crawl_every_minutes: int
    created_at: datetime
    updated_at: datetime
    last_crawl_at: datetime | None = None
    last_crawl: dict[str, Any] | None = None


def check_name(value: Any) -> str:
    return check_text(value, "name", MAX_NAME_CHARS)


def _urls(field: str) -> Any:
    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list | tuple):
            raise InvalidInput(field, "must be a list of http(s) addresses")
        if len(value) > MAX_URLS:
            raise InvalidInput(field, f"at most {MAX_URLS} addresses")
        found: dict[str, None] = {}
        for item in value:
            url = None
            if isinstance(item, str) and len(item) <= MAX_URL_CHARS and _URL.fullmatch(item):
                url = normal_url(item)
            if url is None:
                shown = repr(item[:80]) if isinstance(item, str) else "each"
                raise InvalidInput(
                    field,
                    f"{shown} is not an http(s) address with a host, such as "
                    f"https://shop.example.com/ (at most {MAX_URL_CHARS} characters)",
                )
            found[url] = None
        return tuple(found)

    return check


def _patterns(field: str) -> Any:
    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or len(value) > MAX_PATTERNS:
            raise InvalidInput(field, f"must be a list of at most {MAX_PATTERNS} patterns")
        found: dict[str, None] = {}
        for item in value:
            if not isinstance(item, str) or "\x00" in item or not item.strip():
                raise InvalidInput(field, "each pattern must be non-blank text, such as /blog/*")
            if len(item) > MAX_PATTERN_CHARS:
                raise InvalidInput(field, f"a pattern is at most {MAX_PATTERN_CHARS} characters")
            found[item.strip()] = None
        return tuple(found)

    return check


def _whole(field: str, minimum: int, maximum: int) -> Any:
    def check(value: Any) -> int:
        number = whole_number(value)
        if number is None or not minimum <= number <= maximum:
            raise InvalidInput(field, f"must be a whole number from {minimum} to {maximum}")
        return number

    return check


_URL_ITEM = Annotated[str, described(maxLength=MAX_URL_CHARS, pattern=URL_PATTERN)]
_PATTERN_ITEM = Annotated[str, text(MAX_PATTERN_CHARS)]


@listing(read_only=READ_ONLY_FIELDS)
@attrs.frozen
class WebsitePatch:
    """The fields to change; {} changes nothing."""

    name: Annotated[str | None, text(MAX_NAME_CHARS)] = unless_sent(check_name)
    start_urls: Annotated[
        tuple[_URL_ITEM, ...] | None,
        described("where the crawl starts; each page's links are followed", maxItems=MAX_URLS),
    ] = unless_sent(_urls("start_urls"))
    sitemaps: Annotated[
        tuple[_URL_ITEM, ...] | None,
        described("sitemaps (or sitemap indexes) listing the pages", maxItems=MAX_URLS),
    ] = unless_sent(_urls("sitemaps"))
    include: Annotated[
        tuple[_PATTERN_ITEM, ...] | None,
        described(
            "patterns of the pages kept (* for any characters; against the path and query, "
            "or the whole address when the pattern holds ://); empty: every page",
            maxItems=MAX_PATTERNS,
        ),
    ] = unless_sent(_patterns("include"))
    exclude: Annotated[
        tuple[_PATTERN_ITEM, ...] | None,
        described("patterns of the pages left out, as include's", maxItems=MAX_PATTERNS),
    ] = unless_sent(_patterns("exclude"))
    max_pages: Annotated[
        int | None, described("the most pages one crawl fetches", minimum=1, maximum=MAX_PAGES)
    ] = unless_sent(_whole("max_pages", 1, MAX_PAGES))
    max_depth: Annotated[
        int | None,
        described(
            "how many links from a start URL a page may be (a sitemap's pages are at 0)",
            minimum=0,
            maximum=MAX_DEPTH,
        ),
    ] = unless_sent(_whole("max_depth", 0, MAX_DEPTH))
    crawl_every_minutes: Annotated[
        int | None,
        described(
            "crawl again this often, as a job; 0: only when asked",
            minimum=0,
            maximum=MAX_EVERY_MINUTES,
        ),
    ] = unless_sent(_whole("crawl_every_minutes", 0, MAX_EVERY_MINUTES))

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


@listing(read_only=READ_ONLY_FIELDS)
@attrs.frozen
class NewWebsite(WebsitePatch):
    """A POST's body: a PATCH's fields, ``name`` required, and start_urls or sitemaps."""

    name: Annotated[str, text(MAX_NAME_CHARS)] = attrs.field(kw_only=True)


DEFAULTS: dict[str, Any] = {
    "start_urls": (),
    "sitemaps": (),
    "include": (),
    "exclude": (),
    "max_pages": DEFAULT_MAX_PAGES,
    "max_depth": DEFAULT_MAX_DEPTH,
    "crawl_every_minutes": 0,
}
NOWHERE = "needs a start URL or a sitemap: start_urls or sitemaps must hold an address"


def check_patch(body: Mapping[str, Any]) -> WebsitePatch:
    """A PATCH body: known fields only (unknown and read-only ones refused by name)."""
    return structure_body(body, WebsitePatch)


def check_new(body: Mapping[str, Any]) -> dict[str, Any]:
    """A POST body as the fields to store: ``name`` required, start URLs or sitemaps."""
    fields = check_patch(body)
    if fields.name is None:
        raise InvalidInput("name", "is required: the owner's name for the website")
    given = {**DEFAULTS, **fields.given()}
    if not given["start_urls"] and not given["sitemaps"]:
        raise InvalidInput("start_urls", NOWHERE)
    return given


def patched(site: Website, patch: WebsitePatch) -> dict[str, Any]:
    """The fields ``site`` has once ``patch`` is applied; it must still start somewhere."""
    fields = {**attrs.asdict(site, recurse=False), **patch.given()}
    if not fields["start_urls"] and not fields["sitemaps"]:
        raise InvalidInput("start_urls", NOWHERE)
    return fields
