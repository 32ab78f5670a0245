"""/websites: the owner's websites as sources of documents. Create, list, read, edit and
delete one; crawl it in the background (a job: GET /jobs/{id}); list the pages its crawls
reached with each one's outcome. The rules are ``ragcore.websites``; crawling is
``ragio.websites.crawl``."""

from __future__ import annotations

from quart import Blueprint, request

from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.api.websites import (
    CrawlStarted,
    PagesQuery,
    WebsitePage,
    WebsitePages,
    Websites,
)
from ragcore.knowledge.documents import forget_documents
from ragcore.websites.sites import NewWebsite, Website, WebsitePatch, check_new, check_patch
from ragcore.websites.sites import patched as patched_fields
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.jobs import poke_worker
from ragio.runner import run
from ragio.websites import store
from ragio.websites.crawl import queue_crawl

blueprint = Blueprint("websites", __name__)
PATH = "/websites"
SITE_ID = {"path": {"id": {"type": "integer"}}}
SITES = ("website", PATH)  # what a path id names, and where they are listed


def _taken(name: str) -> ProblemError:
    return ProblemError(409, f"a website named {name[:80]!r} exists already", field="name")


async def _found(raw: str) -> Website:
    found = await service().database.run(store.get, path_id(raw, *SITES))
    if found is None:
        raise no_such(raw, *SITES)
    return found


@blueprint.get(PATH)
@operation(Reply(200, "The websites", Websites))
async def list_websites() -> Websites:
    """List the websites, oldest first, each with its last crawl's result"""
    return Websites(await service().database.run(store.list_sites))


@blueprint.post(PATH)
@operation(Reply(201, "Created (Location: its URL)", Website), 409, 422, body=NewWebsite)
async def create_website() -> tuple[Website, int, dict[str, str]]:
    """Add a website: start_urls and/or sitemaps, patterns, max_pages, max_depth

    A website needs a start URL or a sitemap (422 naming start_urls otherwise). Nothing is
    fetched until a crawl: POST /websites/{id}/crawl, or crawl_every_minutes. Only the
    hosts of the start URLs and sitemaps are crawled."""
    svc = service()
    fields = check_new(await json_body(required=True))
    try:
        site = await svc.database.run(store.create, fields, svc.clock.now())
    except store.NameTaken as taken:
        raise _taken(taken.name) from None
    return site, 201, {"Location": f"{PATH}/{site.id}"}


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The website and its last crawl", Website), 404, **SITE_ID)
async def get_website(id: str) -> Website:  # noqa: A002 (the path's name)
    """One website, with its last crawl's result"""
    return await _found(id)


@blueprint.patch(f"{PATH}/<id>")
@operation(Reply(200, "Updated", Website), 404, 409, 422, body=WebsitePatch, **SITE_ID)
async def patch_website(id: str) -> Website:  # noqa: A002 (the path's name)
    """Change a website's fields; the next crawl follows them

    Pages the next crawl no longer reaches are removed then. The website must keep a start
    URL or a sitemap (422 naming start_urls otherwise)."""
    svc = service()
    patch = check_patch(await json_body(required=True))
    site = await _found(id)
    try:
        saved = await svc.database.run(
            store.update, site.id, patched_fields(site, patch), svc.clock.now()
        )
    except store.NameTaken as taken:
        raise _taken(taken.name) from None
    if saved is None:
        raise no_such(id, *SITES)
    return saved


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Deleted, with the documents of its pages"), 404, **SITE_ID)
async def delete_website(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Delete a website and the documents its crawls stored"""
    svc = service()
    documents = await svc.database.run(store.delete, path_id(id, *SITES))
    if documents is None:
        raise no_such(id, *SITES)
    for document_id in documents:
        await run(forget_documents(document_id), svc)
    return "", 204


@blueprint.post(f"{PATH}/<id>/crawl")
@operation(
    Reply(202, "Crawling in the background (Location: the job)", CrawlStarted), 404, **SITE_ID
)
async def crawl_website(id: str) -> tuple[CrawlStarted, int, dict[str, str]]:  # noqa: A002
    """Crawl the website now, as a job

    Pages that did not change since the last crawl (304, or the same body) are not read or
    embedded again; changed ones are replaced, new ones added, gone ones removed. GET
    /jobs/{job_id} shows the progress (pages fetched of pages known) and the result. A
    crawl already queued or running is answered as is (already: true)."""
    svc = service()
    site = await _found(id)
    job, queued = await queue_crawl(svc, site)
    poke_worker()
    started = CrawlStarted(job.id, job.status, not queued)
    return started, 202, {"Location": f"/jobs/{job.id}"}


@blueprint.get(f"{PATH}/<id>/pages")
@operation(
    Reply(200, "A page of the website's pages, by address", WebsitePages),
    404,
    422,
    query=PagesQuery,
    **SITE_ID,
)
async def website_pages(id: str) -> WebsitePages:  # noqa: A002 (the path's name)
    """The pages the crawls reached, by address, with each one's last outcome and reason

    outcome= lists one outcome only (failed, gone, disallowed, …)."""
    query = read_query(PagesQuery, request.args)
    site = await _found(id)
    found, total = await service().database.run(
        store.page_list, site.id, query.after, query.limit + 1, query.outcome
    )
    more = len(found) > query.limit
    found = found[: query.limit]
    pages = [WebsitePage(p.url, p.outcome, p.reason, p.document_id, p.fetched_at) for p in found]
    return WebsitePages(pages, total, found[-1].url if more else None)
