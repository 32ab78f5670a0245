"""/websites: a website as the API shows it, its pages, and a crawl started
(``ragcore.websites`` holds the rules)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, get_args

import attrs

from ragcore.schema import described
from ragcore.websites.crawl import Outcome
from ragcore.websites.pages import MAX_URL_CHARS
from ragcore.websites.sites import Website

MAX_PAGES_PAGE = 500
OUTCOMES = list(get_args(Outcome))


@attrs.frozen
class Websites:
    websites: list[Website]


@attrs.frozen
class WebsitePage:
    """A page the last crawl that reached it fetched (or found disallowed)."""

    url: str
    outcome: Annotated[str, described(enum=OUTCOMES)]
    reason: Annotated[str, described("why, for an outcome that needs one")]
    document_id: Annotated[int | None, described("the document it is; null: none")]
    fetched_at: datetime


@attrs.frozen
class WebsitePages:
    pages: list[WebsitePage]
    total: Annotated[int, described("pages of this outcome (or all), on every page")]
    next_after: Annotated[
        str | None, described("pass as after= for the next page; null: no more")
    ] = None


@attrs.frozen
class PagesQuery:
    after: Annotated[
        str, described("the last address of the previous page", maxLength=MAX_URL_CHARS)
    ] = ""
    limit: Annotated[int, described(minimum=1, maximum=MAX_PAGES_PAGE)] = 100
    outcome: Annotated[str | None, described(enum=OUTCOMES)] = None


@attrs.frozen
class CrawlStarted:
    """The crawl's job: GET /jobs/{job_id} follows its progress and shows its result."""

    job_id: int
    status: Annotated[str, described("queued, or running when one was under way already")]
    already: Annotated[bool, described("true: a crawl was queued or running already")]
