"""The crawl's rules, pure: which addresses a crawl fetches, what becomes of each page it
fetched, and what it removes at the end.

- **Where.** Only the website's own hosts are crawled: those of its start URLs and
  sitemaps, ``www.`` or not (``site_host``), over http or https. A page is kept when the
  patterns keep it (``ragcore.websites.sites``); a start URL is fetched for its links
  whatever the patterns say. Links are followed to ``max_depth`` from a start URL; a
  sitemap's pages are at depth 0. Each address is fetched once per crawl (``Frontier``,
  by its one spelling, ``normal_url``), and at most ``max_pages`` are fetched: a crawl
  that reaches the limit is *cut*.
- **Redirects** are followed by the crawl itself, hop by hop, at most ``MAX_REDIRECTS``:
  each hop's target is judged like a link (the website's hosts, robots.txt, the address
  rules when connecting) and a target seen before in the chain is a loop. The page is
  stored under the address it ends at.
- **A page fetched** becomes a document unless: it answered 304 or its body is the one
  read last time (*unchanged*: nothing is read or embedded again); it names another
  canonical address the crawl may fetch (*canonical*, that one is fetched instead); it
  asks not to be indexed (*not indexed*); it holds no text; or its text is another
  page's (*duplicate*). A 404 or 410 is *gone*.
- **At the end**, the pages the last crawl stored that this one did not reach are
  *removed* with their documents, but only after a crawl that was complete: one cut by
  the page limit, stopped, or where a fetch failed (a timeout, a 5xx: the page that
  failed may be the one linking to the rest) removes nothing it did not see gone. A page
  that failed keeps its document.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

import attrs

from ragcore.websites.pages import path_of, site_host
from ragcore.websites.sites import Website

MAX_REDIRECTS = 5
#: the pages with a reason a crawl's result lists (the rest are counted)
MAX_LISTED = 100

Outcome = Literal[
    "stored",  # a new document
    "changed",  # its document replaced by the new text
    "unchanged",  # 304, or the same body or text as before: nothing embedded
    "redirected",  # it redirects; its target was fetched in its stead
    "canonical",  # it names another canonical address, fetched in its stead
    "duplicate",  # its text is another page's document
    "not indexed",  # robots meta or X-Robots-Tag noindex
    "no text",  # nothing to store (an empty page, a type this service does not read)
    "not kept",  # a start URL the patterns leave out: read for its links only
    "disallowed",  # robots.txt disallows it: not fetched, a document it had removed
    "failed",  # why, in its reason; a document it had is kept
    "gone",  # 404 or 410: its document removed
    "removed",  # no longer reached by a complete crawl: its document removed
]
#: outcomes whose page holds a document after the crawl
WITH_DOCUMENT: tuple[Outcome, ...] = ("stored", "changed", "unchanged")


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A pattern of the owner's as a regular expression (``*``: any characters)."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.S)


@attrs.frozen
class Scope:
    """Where a website's crawl goes: its hosts, its patterns, its depth."""

    hosts: frozenset[str]
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    max_depth: int

    @classmethod
    def of(cls, site: Website) -> Scope:
        return cls(
            frozenset(site_host(url) for url in (*site.start_urls, *site.sitemaps)),
            tuple(pattern_regex(p) for p in site.include),
            tuple(pattern_regex(p) for p in site.exclude),
            site.max_depth,
        )

    def on_site(self, url: str) -> bool:
        return site_host(url) in self.hosts

    def kept(self, url: str) -> bool:
        """Whether the patterns keep the page at ``url``."""
        path = path_of(url)

        def matches(regex: re.Pattern[str]) -> bool:
            return bool(regex.fullmatch(url if "://" in regex.pattern else path))

        return (not self.include or any(map(matches, self.include))) and not any(
            map(matches, self.exclude)
        )


@attrs.define
class Frontier:
    """The addresses one crawl has yet to fetch, breadth first, each once."""

    scope: Scope
    max_pages: int
    queue: deque[tuple[str, int]] = attrs.Factory(deque)
    seen: set[str] = attrs.Factory(set)
    fetched: int = 0
    cut: bool = False  # the page limit left addresses unfetched
    #: links not followed, by why: another site, the patterns, too deep
    skipped: dict[str, int] = attrs.Factory(dict)

    def offer(self, url: str, depth: int, *, start: bool = False) -> None:
        """Queue ``url``, found ``depth`` links from a start URL, if the crawl goes there."""
        if url in self.seen:
            return
        self.seen.add(url)
        if not self.scope.on_site(url):
            self._skip("on another site")
        elif depth > self.scope.max_depth:
            self._skip("deeper than max_depth")
        elif not start and not self.scope.kept(url):
            self._skip("left out by the patterns")
        else:
            self.queue.append((url, depth))

    def claim(self, url: str) -> bool:
        """Take ``url`` (a redirect's or a canonical target) for the page being fetched:
        False when the crawl reached it already."""
        if url in self.seen:
            return False
        self.seen.add(url)
        return True

    def next(self) -> tuple[str, int] | None:
        """The next address to fetch and its depth; None when there is none or the page
        limit is reached (then the crawl is cut)."""
        if not self.queue:
            return None
        if self.fetched >= self.max_pages:
            self.cut = True
            return None
        self.fetched += 1
        return self.queue.popleft()

    def _skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def hop_refusal(target: str, chain: Sequence[str], scope: Scope) -> str | None:
    """Why a redirect from the last address of ``chain`` to ``target`` is not followed."""
    if target in chain:
        loop = " -> ".join((*chain[chain.index(target) :], target))
        return f"a redirect loop: {loop}"
    if len(chain) > MAX_REDIRECTS:
        return f"more than {MAX_REDIRECTS} redirects"
    if not scope.on_site(target):
        return f"redirects to {target}, on another site; not followed"
    return None


def completeness(results: Iterable[PageResult], frontier: Frontier, *, stopped: bool) -> str:
    """Why a crawl may not remove the pages it did not reach, or "" when it may: it was cut
    by the page limit, stopped, or something failed (a page that timed out may be the one
    linking to the rest, a sitemap that failed the one listing them)."""
    if stopped:
        return "stopped between pages, as the owner asked"
    if frontier.cut:
        return f"stopped at max_pages ({frontier.max_pages}) with pages left to fetch"
    failed = sum(1 for result in results if result.outcome == "failed")
    if failed:
        return f"{failed} fetch(es) failed, so pages behind them may not have been reached"
    return ""


def removed_pages(
    known: Mapping[str, int | None], reached: Iterable[str], *, complete: bool
) -> list[str]:
    """The pages (of ``known``: address -> document) that a crawl removes: those it did
    not reach, when it was complete."""
    if not complete:
        return []
    reached = set(reached)
    return [url for url in known if url not in reached]


@attrs.frozen
class PageResult:
    url: str
    outcome: Outcome
    reason: str = ""


def summary(
    results: Iterable[PageResult], frontier: Frontier, removed: int, *, incomplete: str = ""
) -> dict[str, Any]:
    """A crawl's result as its job shows it: counts by outcome, the links not followed,
    whether it was complete (``incomplete`` says why not: ``completeness``), and the pages
    that need a look (up to ``MAX_LISTED``)."""
    counts: dict[str, int] = {}
    listed: list[dict[str, str]] = []
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
        if result.outcome in ("failed", "gone", "disallowed", "not indexed", "no text") and (
            len(listed) < MAX_LISTED
        ):
            listed.append({"url": result.url, "outcome": result.outcome, "reason": result.reason})
    if removed:
        counts["removed"] = removed
    done: dict[str, Any] = {
        "pages": {outcome: counts[outcome] for outcome in get_args(Outcome) if outcome in counts},
        "fetched": frontier.fetched,
        "links_not_followed": dict(frontier.skipped),
        "complete": not incomplete,
        "problems": listed,
    }
    if incomplete:
        done["incomplete"] = f"{incomplete}: nothing unseen was removed"
    return done
