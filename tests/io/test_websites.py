"""A website as a source: the real service crawls a local copy of a real documentation site
(Debian's apache2-doc, the Apache HTTP Server manual) served on 127.0.0.1, keeps it in
sync, and records why each misbehaving page was not stored."""

from __future__ import annotations

import gzip
import shutil
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
import trio

from tests.io.fakes.website import FakeWebsite
from tests.io.test_document_jobs import wait_for

MANUAL = Path("/usr/share/doc/apache2-doc/manual/en")
ROBOTS = """\
User-agent: *
Disallow: /manual/en/misc/perf-tuning.html

User-agent: ragchat
Disallow: /manual/en/howto/ssi.html
"""
PATTERNS = ["/manual/en/howto/*", "/manual/en/misc/*"]


@pytest.fixture
def settings_overrides():
    return {"websites_allow_private_targets": True}


@pytest.fixture
def site_root(tmp_path: Path) -> Path:
    """A copy of two folders of the manual, as the site serves it under /manual/en/."""
    root = tmp_path / "site"
    for folder in ("howto", "misc"):
        shutil.copytree(MANUAL / folder, root / "manual" / "en" / folder)
    (root / "robots.txt").write_text(ROBOTS)
    return root


class CountingEmbedder:
    """The service's embedder, counting the texts it is given for documents."""

    def __init__(self, real):
        self.real, self.name, self.space = real, real.name, real.space
        self.texts: list[str] = []

    async def embed(self, texts, purpose):
        if purpose == "document":
            self.texts.extend(texts)
        return await self.real.embed(texts, purpose)


async def crawl(api: httpx.AsyncClient, site_id: int) -> dict:
    response = await api.post(f"/websites/{site_id}/crawl")
    assert response.status_code == 202, response.text
    job = await wait_for(api, response.headers["location"], "done", "failed", "cancelled")
    assert job["status"] == "done", job
    return job["result"]


def documents(database_url: str) -> dict[str, str | None]:
    with psycopg.connect(database_url) as conn:
        return dict(conn.execute("SELECT name, source_url FROM documents").fetchall())


def chunk_texts(database_url: str, *names: str) -> set[str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            """SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id
               WHERE d.name = ANY(%s)""",
            (list(names),),
        ).fetchall()
    return {row[0] for row in rows}


async def test_a_site_is_crawled_kept_in_sync_and_cited_by_its_urls(
    api, service, serve_fake, site_root, database_url
):
    site = await serve_fake(FakeWebsite(site_root))
    base = site.base_url
    service.embedder = counting = CountingEmbedder(service.embedder)
    created = await api.post(
        "/websites",
        json={
            "name": "Apache manual",
            "start_urls": [f"{base}/manual/en/howto/index.html", f"{base}/manual/en/misc/"],
            "include": PATTERNS,
            "max_depth": 3,
        },
    )
    assert created.status_code == 201, created.text
    site_id = created.json()["id"]

    first = await crawl(api, site_id)

    # exactly the pages the patterns and robots.txt allow: every file of the two folders,
    # but the one the ragchat group disallows (the * group's rule is not ours)
    files = sorted(p.relative_to(site_root).as_posix() for p in site_root.rglob("*.html"))
    allowed = {f"{base}/{f}" for f in files if f != "manual/en/howto/ssi.html"}
    allowed.remove(f"{base}/manual/en/misc/index.html")
    allowed.add(f"{base}/manual/en/misc/")  # the start URL names the folder
    stored = documents(database_url)
    assert set(stored) == allowed
    assert all(url == name for name, url in stored.items())  # cited by its URL
    assert "/manual/en/howto/ssi.html" not in site.pages_served()
    assert "/manual/en/misc/perf-tuning.html" in site.pages_served()
    assert first["pages"]["stored"] == len(allowed)
    assert first["complete"] is True
    assert first["links_not_followed"]["left out by the patterns"] > 0
    assert first["links_not_followed"]["on another site"] > 0
    first_embedded = len(counting.texts)
    assert first_embedded >= len(allowed)

    answer = await api.post("/chat", json={"question": "How do I enable HTTP/2 in Apache?"})
    assert answer.status_code == 200, answer.text
    cited = {c["source_url"] for c in answer.json()["citations"]}
    assert f"{base}/manual/en/howto/http2.html" in cited

    # the site changes: two pages edited, one removed, one added (linked from the index)
    howto = site_root / "manual" / "en" / "howto"
    for name in ("cgi.html", "auth.html"):
        page = howto / name
        page.write_text(
            page.read_text().replace("<body", "<body><p>Updated: ask the webmaster.</p", 1)
        )
    (howto / "public_html.html").unlink()
    (howto / "webmaster.html").write_text(
        "<html><body><h1>Webmaster</h1>"
        "<p>The webmaster on duty answers from 9 to 5.</p></body></html>"
    )
    index = howto / "index.html"
    index.write_text(
        index.read_text().replace("<body", '<body><a href="webmaster.html">Webmaster</a', 1)
    )
    counting.texts.clear()
    served_before = len(site.served)

    second = await crawl(api, site_id)
    changed = {f"{base}/manual/en/howto/{n}" for n in ("cgi.html", "auth.html", "index.html")}
    added = f"{base}/manual/en/howto/webmaster.html"
    gone = f"{base}/manual/en/howto/public_html.html"
    assert second["pages"]["changed"] == 3
    assert second["pages"]["stored"] == 1
    assert second["pages"]["gone"] == 1
    assert second["pages"]["unchanged"] == len(allowed) - 4
    stored = documents(database_url)
    assert set(stored) == (allowed - {gone}) | {added}
    # only the changed and new pages were embedded, and the unchanged ones came back 304
    assert set(counting.texts) == chunk_texts(database_url, *changed, added)
    again = site.served[served_before:]
    duplicates = second["pages"].get("duplicate", 0)  # misc/index.html is misc/
    assert sum(1 for s in again if s.status == 304) == len(allowed) - 4 + duplicates
    assert any("answers from 9 to 5" in text for text in chunk_texts(database_url, added))

    # nothing changed: no page read, nothing embedded, a fraction of the first crawl's time
    counting.texts.clear()
    served_before = len(site.served)
    third = await crawl(api, site_id)
    assert third["pages"]["unchanged"] == len(allowed)
    assert not {"stored", "changed", "removed"} & set(third["pages"])
    assert counting.texts == []
    # every page answered 304 (the link to the removed page, 404): no body was sent
    answered = {s.status for s in site.served[served_before:] if s.path != "/robots.txt"}
    assert answered == {304, 404}
    assert third["seconds"] <= 0.05 * first["seconds"], (third["seconds"], first["seconds"])

    pages = (await api.get(f"/websites/{site_id}/pages", params={"outcome": "unchanged"})).json()
    assert {p["url"] for p in pages["pages"]} == set(stored)
    disallowed = (await api.get(f"/websites/{site_id}/pages?outcome=disallowed")).json()
    assert [p["url"] for p in disallowed["pages"]] == [f"{base}/manual/en/howto/ssi.html"]
    assert disallowed["pages"][0]["reason"] == "robots.txt disallows it"


class TestMisbehavingPages:
    @pytest.fixture
    def settings_overrides(self):
        return {"websites_allow_private_targets": True, "websites_timeout_seconds": 1.0}

    async def test_are_recorded_and_nothing_else_is_affected(
        self, api, service, serve_fake, tmp_path, database_url
    ):
        await misbehaving(api, service, serve_fake, tmp_path, database_url)


async def misbehaving(api, service, serve_fake, tmp_path, database_url):
    root = tmp_path / "bad"
    root.mkdir()
    links = ["ok.html", "huge", "slow", "loop-a", "to-the-service", "to-metadata"]
    (root / "index.html").write_text(
        "<html><body>"
        + "".join(f'<a href="/{link}">{link}</a>' for link in links)
        + "</body></html>"
    )
    (root / "ok.html").write_text("<html><body><p>Our shop opens at nine.</p></body></html>")
    fake = FakeWebsite(root, slow={"/slow"}, huge={"/huge": 50 * 2**20})
    site = await serve_fake(fake)
    fake.redirects.update(
        {
            "/loop-a": f"{site.base_url}/loop-b",
            "/loop-b": f"{site.base_url}/loop-a",
            "/to-the-service": f"http://127.0.0.1:{service.settings.app_port}/documents",
            "/to-metadata": "http://169.254.169.254/latest/meta-data/",
        }
    )
    created = await api.post(
        "/websites", json={"name": "bad", "start_urls": [f"{site.base_url}/index.html"]}
    )
    result = await crawl(api, created.json()["id"])
    reasons = {p["url"].removeprefix(site.base_url): p["reason"] for p in result["problems"]}
    assert "WEBSITES_MAX_PAGE_MB" in reasons["/huge"]
    assert "within" in reasons["/slow"]
    assert "redirect loop" in reasons["/loop-a"]
    assert "refused" in reasons["/to-the-service"] and "service" in reasons["/to-the-service"]
    assert "another site" in reasons["/to-metadata"]
    stored = documents(database_url)
    assert f"{site.base_url}/ok.html" in stored
    assert f"{site.base_url}/index.html" in stored
    assert len(stored) == 2


def page(title: str, body: str = "", head: str = "") -> str:
    return f"<html><head>{head}</head><body><h1>{title}</h1><p>{body}</p></body></html>"


def write_sitemap(root: Path, base: str, paths: list[str]) -> None:
    """A gzipped sitemap of ``paths`` behind a sitemap index, as large sites publish them."""
    urls = "".join(f"<url><loc>{base}/{p}</loc></url>" for p in paths)
    urlset = f'<?xml version="1.0"?><urlset xmlns="{SITEMAPS}">{urls}</urlset>'
    (root / "pages.xml.gz").write_bytes(gzip.compress(urlset.encode()))
    index = f"<sitemapindex><sitemap><loc>{base}/pages.xml.gz</loc></sitemap></sitemapindex>"
    (root / "sitemap.xml").write_text(index)


SITEMAPS = "http://www.sitemaps.org/schemas/sitemap/0.9"


async def test_a_sitemap_canonical_addresses_noindex_and_pages_no_longer_listed(
    api, serve_fake, tmp_path, database_url
):
    root = tmp_path / "shop"
    root.mkdir()
    (root / "menu.html").write_text(page("Menu", "A large pizza is 12 euros."))
    (root / "hours.html").write_text(page("Hours", "We open at nine."))
    (root / "print.html").write_text(
        page("Menu", "Printable.", '<link rel="canonical" href="/menu.html">')
    )
    (root / "draft.html").write_text(
        page("Draft", "Not yet.", '<meta name="robots" content="noindex">')
    )
    site = await serve_fake(FakeWebsite(root))
    base = site.base_url
    write_sitemap(root, base, ["menu.html", "hours.html", "print.html", "draft.html"])
    made = await api.post(
        "/websites", json={"name": "shop", "sitemaps": [f"{base}/sitemap.xml"], "max_depth": 0}
    )
    site_id = made.json()["id"]

    first = await crawl(api, site_id)
    assert first["pages"] == {"stored": 2, "canonical": 1, "not indexed": 1}
    assert set(documents(database_url)) == {f"{base}/menu.html", f"{base}/hours.html"}

    write_sitemap(root, base, ["menu.html", "print.html", "draft.html"])  # hours delisted
    second = await crawl(api, site_id)
    assert second["pages"] == {"unchanged": 1, "canonical": 1, "not indexed": 1, "removed": 1}
    assert set(documents(database_url)) == {f"{base}/menu.html"}
    listed = (await api.get(f"/websites/{site_id}")).json()
    assert listed["last_crawl"]["pages"] == second["pages"]

    # the sitemap fails for a while: nothing it listed is taken for gone
    site.failing.add("/sitemap.xml")
    third = await crawl(api, site_id)
    assert third["complete"] is False and "failed" in third["incomplete"]
    assert set(documents(database_url)) == {f"{base}/menu.html"}

    # a website deleted takes its pages' documents with it, and nothing else
    await api.post("/documents", json={"name": "notes.md", "text": "Our own notes."})
    assert (await api.delete(f"/websites/{site_id}")).status_code == 204
    assert set(documents(database_url)) == {"notes.md"}
    assert (await api.get(f"/websites/{site_id}/pages")).status_code == 404


def index_site(root: Path, pages: int) -> Path:
    """A site of an index page linking ``pages`` short pages, in ``root``."""
    root.mkdir()
    links = "".join(f'<a href="/p{i}.html">{i}</a>' for i in range(pages))
    (root / "index.html").write_text(page("Index", links))
    for i in range(pages):
        (root / f"p{i}.html").write_text(page(f"Page {i}", f"Fact number {i}."))
    return root


class TestPace:
    @pytest.fixture
    def settings_overrides(self):
        return {"websites_allow_private_targets": True, "websites_host_concurrency": 2}

    async def test_at_most_the_host_concurrency_and_the_crawl_delay_apart(
        self, api, serve_fake, tmp_path
    ):
        root = index_site(tmp_path / "pace", 8)
        busy = await serve_fake(FakeWebsite(root, delay=0.3))  # long enough to overlap
        made = await api.post("/websites", json={"name": "busy", "start_urls": [busy.base_url]})
        await crawl(api, made.json()["id"])
        assert busy.most_in_flight == 2

        (root / "robots.txt").write_text("User-agent: *\nCrawl-delay: 0.3\n")
        slow = await serve_fake(FakeWebsite(root))
        made = await api.post("/websites", json={"name": "polite", "start_urls": [slow.base_url]})
        await crawl(api, made.json()["id"])
        starts = sorted(s.at for s in slow.served if s.path != "/robots.txt")
        assert len(starts) == 9
        # paced 0.3 s apart as they leave; their arrival may differ by a few ms under load
        # (without the pace they would arrive together)
        assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.25


async def test_a_crawl_is_scheduled_when_due_and_can_be_stopped(
    api, service, serve_fake, tmp_path, fake_clock
):
    from ragio.websites.crawl import queue_due_crawls

    root = index_site(tmp_path / "site", 30)
    site = await serve_fake(FakeWebsite(root, delay=0.1))
    body = {"name": "s", "start_urls": [site.base_url], "crawl_every_minutes": 60}
    assert (await api.post("/websites", json=body)).status_code == 201

    await queue_due_crawls(service)  # never crawled: due
    jobs = (await api.get("/jobs", params={"kind": "crawl"})).json()["jobs"]
    assert len(jobs) == 1
    with trio.fail_after(30):
        while (await api.get(f"/jobs/{jobs[0]['id']}")).json()["progress_done"] < 3:
            await trio.sleep(0.05)
    assert (await api.delete(f"/jobs/{jobs[0]['id']}")).status_code == 202
    stopped = await wait_for(api, f"/jobs/{jobs[0]['id']}", "cancelled", "done", "failed")
    assert stopped["status"] == "cancelled"
    assert stopped["result"]["complete"] is False
    assert 0 < sum(stopped["result"]["pages"].values()) < 31

    await queue_due_crawls(service)  # it ended now: due again only in an hour
    assert len((await api.get("/jobs", params={"kind": "crawl"})).json()["jobs"]) == 1
    fake_clock.advance(timedelta(minutes=61))
    await queue_due_crawls(service)
    assert len((await api.get("/jobs", params={"kind": "crawl"})).json()["jobs"]) == 2
