"""Crawling a website into documents: the runner of ``ragcore.websites.crawl``'s rules.

A crawl reads the website's sitemaps (sitemap indexes too, at most ``MAX_SITEMAPS``),
then fetches pages breadth first with a few workers: per host at most
WEBSITES_HOST_CONCURRENCY at once, or one at a time ``crawl-delay`` apart when its
robots.txt asks. Each host's robots.txt is read once per crawl, before its first page.
Each page is fetched (``ragio.websites.fetch``) conditionally when the last crawl stored
it; a page that changed is read like an upload of its type (HTML, text, markdown, PDF,
Word, CSV), chunked and stored as the document named by its address, replacing the
version before (``store_new_documents``: a text already stored is not embedded again).
Each page's row is saved as it is done, so progress survives a stop; the documents of
pages gone are removed at the end. The result is ``ragcore.websites.crawl.summary``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import logging
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx
import trio

from ragcore.errors import InvalidInput, TooLarge
from ragcore.jobs import JobStopped
from ragcore.knowledge.documents import (
    Format,
    NameTaken,
    forget_documents,
    format_for_suffix,
    format_for_type,
    prepare_document,
    store_new_documents,
)
from ragcore.knowledge.formats import Unreadable, decode_text, html_charset
from ragcore.websites import robots as robots_rules
from ragcore.websites.crawl import (
    MAX_REDIRECTS,
    WITH_DOCUMENT,
    Frontier,
    Outcome,
    PageResult,
    Scope,
    completeness,
    hop_refusal,
    removed_pages,
    summary,
)
from ragcore.websites.pages import (
    document_name,
    normal_url,
    origin_of,
    path_of,
    read_page,
    robots_header,
    sitemap_urls,
    titled,
)
from ragcore.websites.sites import Website
from ragio.jobs import store as jobs_store
from ragio.jobs.worker import Running
from ragio.knowledge.formats import read_upload
from ragio.runner import run
from ragio.service import Service
from ragio.websites import store
from ragio.websites.fetch import Fetched, crawl_client, fetch

log = logging.getLogger(__name__)
MAX_SITEMAPS = 50
#: the most workers of one crawl, whatever the hosts
MAX_WORKERS = 8
#: how often a running crawl looks whether the owner asked it to stop
STOP_CHECK_SECONDS = 1.0
#: how often a running crawl's job shows its progress
PROGRESS_SECONDS = 0.5

#: ``async def stop_point(done)``: raises JobStopped once the owner asked the job to stop
StopPoint = Callable[[dict[str, Any]], Awaitable[None]]
#: ``on_progress(done, total)``: pages fetched of pages known so far
OnProgress = Callable[[int, int], Awaitable[None]]


async def _nothing(*_: Any) -> None:
    return None


@attrs.define
class _Host:
    """One origin's robots.txt and pace, for one crawl."""

    robots: robots_rules.Robots | None = None
    read: trio.Lock = attrs.Factory(trio.Lock)
    limit: trio.CapacityLimiter | None = None
    next_start: float = 0.0


@attrs.define
class Crawl:
    service: Service
    site: Website
    client: httpx.AsyncClient
    known: dict[str, store.StoredPage]
    frontier: Frontier
    results: list[PageResult] = attrs.Factory(list)
    hosts: dict[str, _Host] = attrs.Factory(dict)
    stopped: bool = False

    @property
    def settings(self) -> Any:
        return self.service.settings

    # --- the network, paced ---------------------------------------------------------

    async def get(self, url: str, etag: str | None = None, modified: str | None = None) -> Fetched:
        return await fetch(
            self.client,
            url,
            timeout=self.settings.websites_timeout_seconds,
            max_bytes=self.max_bytes,
            etag=etag,
            last_modified=modified,
        )

    async def host(self, url: str) -> _Host:
        """The origin of ``url``, its robots.txt read (once per crawl)."""
        origin = origin_of(url)
        host = self.hosts.setdefault(origin, _Host())
        async with host.read:
            if host.robots is None:
                host.robots = await self.read_robots(origin)
                delay = host.robots.crawl_delay
                host.limit = trio.CapacityLimiter(
                    1 if delay else self.settings.websites_host_concurrency
                )
        return host

    async def read_robots(self, origin: str) -> robots_rules.Robots:
        url = f"{origin}/robots.txt"
        for _ in range(MAX_REDIRECTS):
            got = await self.get(url)
            if got.failure:
                return robots_rules.unreadable(got.failure)
            location = got.headers.get("location")
            if 300 <= got.status < 400 and location:
                target = normal_url(location, url)
                if target is None or origin_of(target) != origin:
                    return robots_rules.ALLOW_ALL  # RFC 9309: may be treated as unavailable
                url = target
                continue
            if 200 <= got.status < 300:
                return robots_rules.parse(decode_text(got.body[: robots_rules.MAX_ROBOTS_BYTES]))
            if 400 <= got.status < 500:
                return robots_rules.ALLOW_ALL
            return robots_rules.unreadable(f"HTTP {got.status}")
        return robots_rules.ALLOW_ALL

    async def paced(
        self, url: str, etag: str | None = None, modified: str | None = None
    ) -> Fetched:
        """``get`` within the host's limit, ``crawl-delay`` after the last start."""
        host = await self.host(url)
        assert host.limit is not None and host.robots is not None
        async with host.limit:
            delay = host.robots.crawl_delay
            if delay:
                await trio.sleep_until(host.next_start)
                host.next_start = trio.current_time() + delay
            return await self.get(url, etag, modified)

    # --- sitemaps -------------------------------------------------------------------

    async def read_sitemaps(self) -> None:
        queue = list(self.site.sitemaps)
        read: set[str] = set()
        while queue and len(read) < MAX_SITEMAPS:
            url = queue.pop(0)
            if url in read:
                continue
            read.add(url)
            host = await self.host(url)
            assert host.robots is not None
            if not host.robots.allows(path_of(url)):
                self.record(url, "failed", "robots.txt disallows this sitemap")
                continue
            got = await self.paced(url)
            if got.failure or got.status != 200:
                self.record(url, "failed", "sitemap: " + (got.failure or f"HTTP {got.status}"))
                continue
            try:
                text = decode_text(_unzipped(got.body, self.max_bytes))
            except (Unreadable, OSError, EOFError, zlib.error) as error:
                self.record(url, "failed", f"sitemap: cannot be read ({error})")
                continue
            listed = sitemap_urls(text, url)
            if listed.index:
                queue.extend(u for u in listed.urls if self.frontier.scope.on_site(u))
            else:
                for page in listed.urls:
                    self.frontier.offer(page, 0)

    @property
    def max_bytes(self) -> int:
        return max(1, round(self.settings.websites_max_page_mb * 2**20))

    # --- pages ----------------------------------------------------------------------

    def record(self, url: str, outcome: Outcome, reason: str = "") -> None:
        self.results.append(PageResult(url, outcome, reason))

    async def save(
        self,
        url: str,
        outcome: Outcome,
        reason: str = "",
        *,
        document_id: int | None = None,
        got: Fetched | None = None,
        body_hash: str | None = None,
        links: tuple[str, ...] = (),
    ) -> None:
        """Record a page's outcome and save its row. A page that failed keeps what it had;
        one left without a document has the one it had removed."""
        self.record(url, outcome, reason)
        prior = self.known.get(url)
        now = self.service.clock.now()
        if outcome == "failed" and prior is not None:
            page = attrs.evolve(prior, outcome=outcome, reason=reason, fetched_at=now)
        elif outcome in (*WITH_DOCUMENT, "duplicate"):  # asked conditionally next time
            headers = got.headers if got is not None else httpx.Headers()
            same = prior if outcome in ("unchanged", "duplicate") and prior is not None else None
            if outcome in WITH_DOCUMENT:
                document_id = document_id or (same.document_id if same else None)
            page = store.StoredPage(
                url,
                document_id,
                headers.get("etag") or (same.etag if same else None),
                headers.get("last-modified") or (same.last_modified if same else None),
                body_hash or (same.body_hash if same else None),
                links,
                outcome,
                reason,
                now,
            )
        else:
            page = store.StoredPage(url, None, None, None, None, (), outcome, reason, now)
        if prior is not None and prior.document_id and page.document_id is None:
            await run(forget_documents(prior.document_id), self.service)
        await self.service.database.run(store.save_page, self.site.id, page)

    async def page(self, url: str, depth: int) -> None:
        """Fetch ``url`` (following its redirects) and store what it holds."""
        chain = [url]
        current = url
        while True:
            host = await self.host(current)
            assert host.robots is not None
            if not host.robots.allows(path_of(current)):
                # a host that cannot be reached fails (its documents kept, as on a timeout)
                why = host.robots.refused or "robots.txt disallows it"
                reason = why if current == url else f"redirects to {current}: {why}"
                await self.save(url, "failed" if host.robots.refused else "disallowed", reason)
                return
            prior = self.known.get(current)
            conditional = prior is not None and (
                prior.document_id is not None or prior.outcome == "duplicate"
            )
            got = await self.paced(
                current,
                prior.etag if conditional and prior else None,
                prior.last_modified if conditional and prior else None,
            )
            if got.failure:
                await self.save(url, "failed", got.failure)
                return
            location = got.headers.get("location")
            if 300 <= got.status < 400 and got.status != 304 and location:
                target = normal_url(location, current)
                refusal = (
                    "a redirect to an address that is not http(s)"
                    if target is None
                    else hop_refusal(target, chain, self.frontier.scope)
                )
                if refusal is not None:
                    await self.save(url, "failed", refusal)
                    return
                assert target is not None
                if not self.frontier.scope.kept(target):
                    await self.save(url, "redirected", f"to {target}, left out by the patterns")
                    return
                if not self.frontier.claim(target):
                    await self.save(url, "redirected", f"to {target}, reached already")
                    return
                chain.append(target)
                current = target
                continue
            break
        if current != url:
            await self.save(url, "redirected", f"to {current}")
        await self.read(current, depth, got, conditional)

    async def read(self, url: str, depth: int, got: Fetched, conditional: bool) -> None:
        """Store the page fetched at ``url`` (its final address)."""
        prior = self.known.get(url)
        if got.status == 304:
            if conditional and prior is not None:
                for link in prior.links:  # not read again: the links it had are followed
                    self.frontier.offer(link, depth + 1)
                kept: Outcome = "unchanged" if prior.document_id else "duplicate"
                await self.save(url, kept, prior.reason, got=got, links=prior.links)
            else:
                await self.save(url, "failed", "answered 304 to a request that was not conditional")
            return
        if got.status in (404, 410):
            await self.save(url, "gone", f"HTTP {got.status}")
            return
        if not 200 <= got.status < 300:
            await self.save(url, "failed", f"HTTP {got.status}")
            return
        body_hash = hashlib.sha256(got.body).hexdigest()
        fmt = format_for_type(got.headers.get("content-type")) or format_for_suffix(path_of(url))
        if fmt is None:
            shown = got.headers.get("content-type", "none").split(";")[0]
            await self.save(url, "no text", f"its type ({shown}) is not one this service reads")
            return
        noindex, nofollow = robots_header(got.headers.get("x-robots-tag", ""))
        links: tuple[str, ...] = ()
        title = ""
        if fmt.name == "html":
            text = decode_text(got.body, _charset(got) or html_charset(got.body))
            page = await trio.to_thread.run_sync(read_page, text, url)
            noindex |= page.noindex
            title = page.title
            if not (nofollow or page.nofollow):
                links = page.links
                for link in links:
                    self.frontier.offer(link, depth + 1)
            canonical = page.canonical
            scope = self.frontier.scope
            if canonical not in (None, url) and scope.on_site(canonical) and scope.kept(canonical):
                self.frontier.offer(canonical, depth)
                await self.save(url, "canonical", f"its canonical address is {canonical}")
                return
        if noindex:
            await self.save(url, "not indexed", "it asks not to be indexed (noindex)")
            return
        if not self.frontier.scope.kept(url):
            await self.save(url, "not kept", "a start URL the patterns leave out: read for links")
            return
        if prior is not None and prior.document_id and prior.body_hash == body_hash:
            await self.save(url, "unchanged", got=got, body_hash=body_hash, links=links)
            return
        await self.store(url, fmt, got, body_hash, links, title)

    async def store(
        self,
        url: str,
        fmt: Format,
        got: Fetched,
        body_hash: str,
        links: tuple[str, ...],
        title: str = "",
    ) -> None:
        prior = self.known.get(url)
        seconds = self.settings.max_document_read_seconds
        try:
            text = titled(await read_upload(got.body, fmt, _charset(got), seconds=seconds), title)
            doc = await trio.to_thread.run_sync(
                functools.partial(
                    prepare_document,
                    document_name(url),
                    text,
                    content_type=fmt.content_type,
                    size_bytes=len(got.body),
                    source_url=url,
                )
            )
        except TooLarge as error:
            await self.save(url, "failed", error.message)
            return
        except (Unreadable, InvalidInput) as error:
            await self.save(url, "no text", error.message)
            return
        [stored] = await run(store_new_documents([doc], replace=True), self.service)
        if isinstance(stored, NameTaken):  # not with replace; kept for the type's sake
            await self.save(url, "failed", str(stored))
            return
        previous = prior.document_id if prior is not None else None
        if stored.created:
            outcome: Outcome = "changed" if previous or stored.replaced else "stored"
        elif stored.id == previous:
            outcome = "unchanged"
        else:
            await self.save(
                url,
                "duplicate",
                f"the same text as {stored.name}",
                got=got,
                body_hash=body_hash,
                links=links,
            )
            return
        await self.save(
            url, outcome, document_id=stored.id, got=got, body_hash=body_hash, links=links
        )

    # --- the whole crawl --------------------------------------------------------------

    async def pages(self, stop_point: StopPoint, on_progress: OnProgress) -> None:
        busy = 0
        more = trio.Event()
        last_check = next_progress = trio.current_time()

        async def worker() -> None:
            nonlocal busy, more, last_check, next_progress
            while True:
                if trio.current_time() - last_check >= STOP_CHECK_SECONDS:
                    last_check = next_progress = trio.current_time()
                    await self.ask_stop(stop_point)
                item = None if self.stopped else self.frontier.next()
                if item is None:
                    if busy == 0:
                        more.set()
                        return
                    await more.wait()
                    continue
                busy += 1
                try:
                    await self.page(*item)
                finally:
                    busy -= 1
                    more.set()
                    more = trio.Event()
                if trio.current_time() >= next_progress:
                    next_progress = trio.current_time() + PROGRESS_SECONDS
                    await on_progress(
                        self.frontier.fetched, self.frontier.fetched + len(self.frontier.queue)
                    )

        hosts = len(self.frontier.scope.hosts)
        workers = min(MAX_WORKERS, self.settings.websites_host_concurrency * hosts)
        async with trio.open_nursery() as nursery:
            for _ in range(max(1, workers)):
                nursery.start_soon(worker)

    async def ask_stop(self, stop_point: StopPoint) -> None:
        try:
            await stop_point({})
        except JobStopped:  # the crawl ends between pages, as asked
            self.stopped = True

    @property
    def incomplete(self) -> str:
        return completeness(self.results, self.frontier, stopped=self.stopped)

    async def remove_unreached(self) -> int:
        reached = {result.url for result in self.results}
        gone = [r.url for r in self.results if r.outcome == "gone"]
        unreached = removed_pages(
            {url: p.document_id for url, p in self.known.items()},
            reached,
            complete=not self.incomplete,
        )
        for url in unreached:
            document_id = self.known[url].document_id
            if document_id is not None:
                await run(forget_documents(document_id), self.service)
        await self.service.database.run(store.drop_pages, self.site.id, [*unreached, *gone])
        return len(unreached)


def _charset(got: Fetched) -> str | None:
    content_type = got.headers.get("content-type", "")
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return None


def _unzipped(body: bytes, max_bytes: int) -> bytes:
    """A sitemap's bytes, gunzipped when it is a .xml.gz, at most ``max_bytes``."""
    if not body.startswith(b"\x1f\x8b"):
        return body
    with gzip.GzipFile(fileobj=io.BytesIO(body)) as unzipped:
        data = unzipped.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError("it unpacks to more than WEBSITES_MAX_PAGE_MB")
    return data


async def crawl(
    service: Service,
    site: Website,
    *,
    stop_point: StopPoint = _nothing,
    on_progress: OnProgress = _nothing,
) -> dict[str, Any]:
    """Crawl ``site`` once: its pages stored, changed ones replaced, gone ones removed;
    the summary, also kept as the website's last crawl. JobStopped (with the summary)
    when ``stop_point`` said the owner asked it to stop."""
    began = trio.current_time()
    known = await service.database.run(store.pages_of, site.id)
    frontier = Frontier(Scope.of(site), site.max_pages)
    for url in site.start_urls:
        frontier.offer(url, 0, start=True)
    async with crawl_client(service) as client:
        job = Crawl(service, site, client, known, frontier)
        await job.read_sitemaps()
        await on_progress(0, len(frontier.queue))
        await job.pages(stop_point, on_progress)
        await on_progress(frontier.fetched, frontier.fetched)
        removed = await job.remove_unreached()
    result = summary(job.results, frontier, removed, incomplete=job.incomplete)
    result["seconds"] = round(trio.current_time() - began, 3)
    await service.database.run(store.finish, site.id, result, service.clock.now())
    log.info("website %r crawled: %s", site.name, result["pages"])
    if job.stopped:
        raise JobStopped(result)  # the owner asked: its result is the cancelled job's
    return result


#: the kind of job that crawls a website (key: its id)
CRAWL = "crawl"


async def queue_crawl(service: Service, site: Website) -> tuple[Any, bool]:
    """Queue a crawl of ``site``: (the job, True), or (the unfinished one, False)."""
    return await service.database.run(
        lambda conn: jobs_store.enqueue(
            conn, CRAWL, {"website": site.id}, service.clock.now(), key=str(site.id)
        )
    )


async def queue_due_crawls(service: Service) -> None:
    """The websites whose crawl_every_minutes has passed, queued as crawl jobs (one
    unfinished crawl per website: a due one already queued or running is left be)."""
    for site in await service.database.run(store.due, service.clock.now()):
        job, queued = await queue_crawl(service, site)
        if queued:
            log.info(
                "website %r: crawl queued (every %d minutes), job %d",
                site.name,
                site.crawl_every_minutes,
                job.id,
            )


async def crawl_job(running: Running) -> dict[str, Any]:
    """A crawl, as a job: progress is pages fetched of pages known so far; the owner may
    stop it between pages (what it did stays, nothing unseen is removed)."""
    svc, job = running.service, running.job
    site = await svc.database.run(store.get, job.payload["website"])
    if site is None:
        return {"skipped": "the website was deleted"}

    async def progress(done: int, total: int) -> None:
        await running.set_progress(done, total)

    return await crawl(svc, site, stop_point=running.stop_point, on_progress=progress)
