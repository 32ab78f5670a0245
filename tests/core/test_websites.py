"""The crawl's rules: robots.txt as RFC 9309 reads it, a page's links and canonical
address, sitemaps, the patterns, the frontier and what a crawl removes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ragcore.errors import InvalidInput
from ragcore.websites import robots
from ragcore.websites.crawl import (
    MAX_REDIRECTS,
    Frontier,
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
    read_page,
    robots_header,
    site_host,
    sitemap_urls,
    titled,
)
from ragcore.websites.sites import NOWHERE, Website, check_new, check_patch, patched

NOW = datetime(2026, 11, 28, tzinfo=UTC)


# ---------------------------------------------------------------- robots.txt


def test_the_group_for_ragchat_applies_and_not_the_star_group():
    rules = robots.parse("User-agent: *\nDisallow: /\n\nUser-agent: RagChat\nDisallow: /private/\n")
    assert rules.allows("/shop")
    assert not rules.allows("/private/a")


def test_without_a_group_of_its_own_the_star_group_applies():
    rules = robots.parse("User-agent: googlebot\nDisallow: /\n\nUser-agent: *\nDisallow: /tmp/\n")
    assert rules.allows("/shop") and not rules.allows("/tmp/x")


def test_the_longest_match_wins_and_allow_wins_a_tie():
    rules = robots.parse(
        "User-agent: *\nDisallow: /shop/\nAllow: /shop/menu\nAllow: /a\nDisallow: /a\n"
    )
    assert not rules.allows("/shop/cart")
    assert rules.allows("/shop/menu.html")
    assert rules.allows("/a")


def test_wildcards_and_the_end_anchor():
    rules = robots.parse("User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?session=\n")
    assert not rules.allows("/files/menu.pdf")
    assert rules.allows("/files/menu.pdf.html")
    assert not rules.allows("/cart?session=1")
    assert rules.allows("/cart?lang=en")


def test_paths_are_compared_with_their_escapes_decoded():
    rules = robots.parse("User-agent: *\nDisallow: /~joe/\nDisallow: /a%2fb\n")
    assert not rules.allows("/%7Ejoe/index.html")
    assert not rules.allows("/a%2Fb")
    assert rules.allows("/a/b")  # an encoded slash is not a slash


def test_groups_of_one_agent_are_merged_and_several_agents_share_a_group():
    rules = robots.parse(
        "User-agent: ragchat\nUser-agent: other\nDisallow: /a\n\n"
        "User-agent: ragchat\nDisallow: /b\nCrawl-delay: 2.5\nSitemap: https://s.example/map.xml\n"
    )
    assert not rules.allows("/a") and not rules.allows("/b")
    assert rules.crawl_delay == 2.5
    assert rules.sitemaps == ("https://s.example/map.xml",)


def test_an_empty_disallow_allows_everything_and_robots_txt_is_always_allowed():
    assert robots.parse("User-agent: *\nDisallow:\n").allows("/anything")
    assert robots.parse("User-agent: *\nDisallow: /\n").allows("/robots.txt")


def test_a_huge_crawl_delay_is_capped():
    assert robots.parse("User-agent: *\nCrawl-delay: 86400\n").crawl_delay == robots.MAX_CRAWL_DELAY


def test_an_unreadable_robots_txt_allows_nothing_and_says_why():
    rules = robots.unreadable("HTTP 503")
    assert not rules.allows("/")
    assert "HTTP 503" in rules.refused


# ---------------------------------------------------------------- pages


@pytest.mark.parametrize(
    ("url", "spelled"),
    [
        ("HTTP://Shop.Example.COM:80/a/../b/./c?x=1#top", "http://shop.example.com/b/c?x=1"),
        ("https://shop.example.com", "https://shop.example.com/"),
        ("https://shop.example.com:8443/%7euser/", "https://shop.example.com:8443/~user/"),
        ("https://shop.example.com/a%2fb", "https://shop.example.com/a%2Fb"),
        ("mailto:owner@example.com", None),
        ("javascript:alert(1)", None),
        ("https://user:pw@shop.example.com/", None),
        ("https://shop.example.com:99999/", None),
    ],
)
def test_an_address_has_one_spelling(url, spelled):
    assert normal_url(url) == spelled


def test_links_are_read_against_the_base_and_nofollow_ones_are_left():
    page = read_page(
        """<html><head><title> Menu |
        Luigi's </title><base href="https://shop.example.com/menu/">
        <link rel="canonical" href="/menu/">
        <meta name="robots" content="noindex, follow"></head><body>
        <a href="pizza.html">Pizza</a> <a href="pizza.html#size">again</a>
        <a href="/login" rel="nofollow">Log in</a> <a href="mailto:x@example.com">mail</a>
        <script>var a = '<a href="/hidden">';</script></body></html>""",
        "https://shop.example.com/menu/index.html",
    )
    assert page.links == ("https://shop.example.com/menu/pizza.html",)
    assert page.canonical == "https://shop.example.com/menu/"
    assert page.noindex and not page.nofollow
    assert page.title == "Menu | Luigi's"


def test_a_page_without_a_heading_first_is_headed_by_its_title():
    assert titled("Pizza 12 euros.", "Menu") == "# Menu\n\nPizza 12 euros."
    assert titled("# Our menu\n\nPizza.", "Menu") == "# Our menu\n\nPizza."
    assert titled("Pizza.", "") == "Pizza."


def test_robots_directives_for_every_crawler_or_for_ragchat():
    assert robots_header("noindex") == (True, False)
    assert robots_header("none") == (True, True)
    assert robots_header("googlebot: noindex") == (False, False)
    assert robots_header("ragchat: nofollow, noarchive") == (False, True)


def test_a_sitemap_and_a_sitemap_index():
    urlset = """<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <url><loc>https://shop.example.com/a?x=1&amp;y=2</loc></url>
      <url><loc> <![CDATA[https://shop.example.com/b]]> </loc></url></urlset>"""
    listed = sitemap_urls(urlset, "https://shop.example.com/sitemap.xml")
    assert listed.urls == ("https://shop.example.com/a?x=1&y=2", "https://shop.example.com/b")
    assert not listed.index
    index = "<sitemapindex><sitemap><loc>/more.xml</loc></sitemap></sitemapindex>"
    nested = sitemap_urls(index, "https://shop.example.com/sitemap.xml")
    assert nested.index and nested.urls == ("https://shop.example.com/more.xml",)


def test_a_long_address_makes_a_distinct_name_within_the_limit():
    long_a = "https://shop.example.com/" + "a" * 300
    long_b = long_a + "b"
    assert document_name("https://shop.example.com/x") == "https://shop.example.com/x"
    assert len(document_name(long_a)) == 255
    assert document_name(long_a) != document_name(long_b)


def test_www_is_the_same_site():
    assert site_host("https://www.shop.example.com/") == site_host("http://shop.example.com/a")


# ---------------------------------------------------------------- the website's fields


def site(**fields) -> Website:
    given = {
        "start_urls": ("https://shop.example.com/",),
        "sitemaps": (),
        "include": (),
        "exclude": (),
        "max_pages": 500,
        "max_depth": 5,
        "crawl_every_minutes": 0,
        **fields,
    }
    return Website(1, "shop", created_at=NOW, updated_at=NOW, **given)


def test_a_new_website_needs_somewhere_to_start():
    with pytest.raises(InvalidInput) as refused:
        check_new({"name": "shop"})
    assert (refused.value.field, refused.value.message) == ("start_urls", NOWHERE)
    fields = check_new({"name": "shop", "sitemaps": ["https://Shop.example.com/sitemap.xml"]})
    assert fields["sitemaps"] == ("https://shop.example.com/sitemap.xml",)
    assert fields["max_pages"] == 500 and fields["max_depth"] == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"start_urls": ["ftp://shop.example.com/"]}, "start_urls"),
        ({"start_urls": "https://shop.example.com/"}, "start_urls"),
        ({"include": [" "]}, "include"),
        ({"max_pages": 0}, "max_pages"),
        ({"max_depth": 51}, "max_depth"),
        ({"crawl_every_minutes": -1}, "crawl_every_minutes"),
        ({"last_crawl": {}}, "last_crawl"),
    ],
)
def test_bad_fields_are_named(body, field):
    with pytest.raises(InvalidInput) as refused:
        check_new({"name": "shop", "start_urls": ["https://shop.example.com/"], **body})
    assert refused.value.field == field


def test_a_change_may_not_leave_it_nowhere_to_start():
    with pytest.raises(InvalidInput):
        patched(site(), check_patch({"start_urls": []}))
    kept = patched(site(), check_patch({"start_urls": [], "sitemaps": ["https://s.example/m.xml"]}))
    assert kept["sitemaps"] == ("https://s.example/m.xml",)


# ---------------------------------------------------------------- the crawl


def test_patterns_match_the_path_or_the_whole_address():
    scope = Scope.of(
        site(include=("/menu/*", "https://shop.example.com/about"), exclude=("*.pdf",))
    )
    assert scope.kept("https://shop.example.com/menu/pizza")
    assert scope.kept("https://shop.example.com/about")
    assert not scope.kept("https://shop.example.com/menu/card.pdf")
    assert not scope.kept("https://shop.example.com/cart")
    assert Scope.of(site()).kept("https://shop.example.com/anything")


def test_the_frontier_fetches_each_address_once_within_the_site_depth_and_limit():
    frontier = Frontier(Scope.of(site(include=("/menu/*",), max_depth=1)), max_pages=2)
    frontier.offer("https://shop.example.com/", 0, start=True)  # left out, but a start URL
    frontier.offer("https://shop.example.com/", 0)  # once
    frontier.offer("https://other.example.com/menu/x", 1)
    frontier.offer("https://shop.example.com/menu/a", 1)
    frontier.offer("https://shop.example.com/menu/b", 2)
    frontier.offer("https://shop.example.com/cart", 1)
    frontier.offer("https://www.shop.example.com/menu/c", 1)
    assert frontier.next() == ("https://shop.example.com/", 0)
    assert frontier.next() == ("https://shop.example.com/menu/a", 1)
    assert frontier.next() is None and frontier.cut  # the limit, with /menu/c left
    assert frontier.skipped == {
        "on another site": 1,
        "deeper than max_depth": 1,
        "left out by the patterns": 1,
    }


def test_redirects_are_judged_hop_by_hop():
    scope = Scope.of(site())
    a, b = "https://shop.example.com/a", "https://shop.example.com/b"
    assert hop_refusal(b, [a], scope) is None
    assert "redirect loop: https://shop.example.com/a -> " in hop_refusal(a, [a, b], scope)
    assert "another site" in hop_refusal("http://169.254.169.254/", [a], scope)
    chain = [f"https://shop.example.com/{i}" for i in range(MAX_REDIRECTS + 1)]
    assert "more than" in hop_refusal(b, chain, scope)


def test_only_a_complete_crawl_removes_the_pages_it_did_not_reach():
    known = {"https://shop.example.com/a": 1, "https://shop.example.com/b": 2}
    reached = ["https://shop.example.com/a"]
    assert removed_pages(known, reached, complete=True) == ["https://shop.example.com/b"]
    assert removed_pages(known, reached, complete=False) == []


def test_the_summary_counts_outcomes_and_lists_the_problems():
    frontier = Frontier(Scope.of(site()), max_pages=10)
    results = [
        PageResult("https://shop.example.com/", "stored"),
        PageResult("https://shop.example.com/old", "gone", "HTTP 404"),
        PageResult("https://shop.example.com/a", "unchanged"),
    ]
    done = summary(results, frontier, removed=2)
    assert done["pages"] == {"stored": 1, "gone": 1, "unchanged": 1, "removed": 2}
    assert done["problems"] == [
        {"url": "https://shop.example.com/old", "outcome": "gone", "reason": "HTTP 404"}
    ]
    assert done["complete"] is True and "incomplete" not in done


def test_a_crawl_with_a_failure_or_cut_short_is_not_complete():
    frontier = Frontier(Scope.of(site()), max_pages=1)
    ok = [PageResult("https://shop.example.com/", "stored")]
    failed = [*ok, PageResult("https://shop.example.com/hub", "failed", "HTTP 503")]
    assert completeness(ok, frontier, stopped=False) == ""
    assert "failed" in completeness(failed, frontier, stopped=False)
    assert "owner" in completeness(ok, frontier, stopped=True)
    frontier.offer("https://shop.example.com/a", 0)
    frontier.offer("https://shop.example.com/b", 0)
    frontier.next()
    assert frontier.next() is None
    assert "max_pages (1)" in completeness(ok, frontier, stopped=False)
    assert summary(ok, frontier, 0, incomplete="cut")["complete"] is False
