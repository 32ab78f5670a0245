"""Reading a fetched page for the crawl, pure: its address in one spelling, its links, its
canonical address, what its robots meta tags ask, and the addresses a sitemap lists.

- ``normal_url`` spells an address one way, so one page is fetched once: scheme and host
  in lower case, the default port and the fragment dropped, an empty path as ``/``,
  ``.`` and ``..`` segments resolved, and %-escapes of unreserved characters decoded
  (``%7E`` is ``~``) while the others are written in upper case.
- ``read_page`` takes the links of ``<a href>`` and ``<area href>`` (not ``rel=nofollow``
  ones), resolved against ``<base href>`` or the page's address; ``<link
  rel=canonical>``; ``<meta name=robots|ragchat content=noindex, nofollow, none>``; and
  ``<title>``, which heads a page's text when the page has no heading first (``titled``).
  Links are read only from ``<body>``'s text-bearing markup: a script is not read.
- ``sitemap_urls`` reads a sitemap (``<urlset>``) or a sitemap index (``<sitemapindex>``)
  with a tolerant scan of ``<loc>`` elements (no XML parser: no entity expansion), at
  most ``MAX_SITEMAP_URLS``.
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit, urlunsplit

import attrs

from ragcore.targets.addresses import DEFAULT_PORTS

#: the most addresses read from one sitemap (the sitemaps protocol's own limit)
MAX_SITEMAP_URLS = 50_000
MAX_URL_CHARS = 2000
MAX_TITLE_CHARS = 200
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_LOC = re.compile(r"<(?:[A-Za-z0-9_]+:)?loc\b[^>]*>(.*?)</(?:[A-Za-z0-9_]+:)?loc\s*>", re.S | re.I)
_SITEMAP_INDEX = re.compile(r"<(?:[A-Za-z0-9_]+:)?sitemapindex\b", re.I)
_CDATA = re.compile(r"^\s*<!\[CDATA\[(.*)\]\]>\s*$", re.S)


def normal_url(url: str, base: str | None = None) -> str | None:
    """``url`` (relative to ``base`` when given) in its one spelling, or None when it is
    not an http(s) address with a host (a ``mailto:``, a ``javascript:``, a bad port)."""
    url = url.strip()
    if base is not None:
        try:
            url = urljoin(base, url)
        except ValueError:
            return None
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not host or parts.username or parts.password:
        return None
    if len(url) > MAX_URL_CHARS:
        return None
    host = host.rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _escapes(parts.path) or "/"
    segments = posixpath.normpath(path)
    if segments.startswith("//"):  # normpath keeps a leading double slash
        segments = "/" + segments.lstrip("/")
    if path.endswith("/") and not segments.endswith("/"):
        segments += "/"
    return urlunsplit((scheme, netloc, segments, _escapes(parts.query), ""))


def _escapes(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _ESCAPE.sub(one, text)


def path_of(url: str) -> str:
    """The path and query of ``url``, as robots.txt rules are matched against them."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def origin_of(url: str) -> str:
    """``scheme://host[:port]``: where the site's robots.txt is."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def site_host(url: str) -> str:
    """The host of ``url`` without a leading ``www.``: ``example.com`` and
    ``www.example.com`` are one site (many sites redirect one to the other)."""
    host = (urlsplit(url).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


@attrs.frozen
class Page:
    """What the crawl reads from a page besides its text."""

    links: tuple[str, ...] = ()
    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False
    title: str = ""  # its <title>, spaces collapsed


def robots_header(value: str) -> tuple[bool, bool]:
    """(noindex, nofollow) from an ``X-Robots-Tag`` header or a robots meta content: the
    directives for every crawler, or those prefixed ``ragchat:``."""
    noindex = nofollow = False
    for part in value.split(","):
        word = part.strip().lower()
        if ":" in word:
            agent, word = (w.strip() for w in word.split(":", 1))
            if agent != "ragchat":
                continue
        noindex |= word in ("noindex", "none")
        nofollow |= word in ("nofollow", "none")
    return noindex, nofollow


def read_page(text: str, url: str) -> Page:
    """The links, canonical address and robots meta of the HTML ``text`` fetched at ``url``."""
    reader = _PageReader()
    try:
        reader.feed(text)
        reader.close()
    except AssertionError:  # html.parser on some malformed markup: keep what was read
        pass
    base = url
    if reader.base is not None:
        base = normal_url(reader.base, url) or url
    links: dict[str, None] = {}
    for href in reader.links:
        found = normal_url(html.unescape(href), base)
        if found is not None and found != url:
            links[found] = None
    canonical = normal_url(reader.canonical, base) if reader.canonical else None
    title = " ".join("".join(reader.title).split())[:MAX_TITLE_CHARS]
    return Page(tuple(links), canonical, reader.noindex, reader.nofollow, title)


def titled(text: str, title: str) -> str:
    """A page's text under its title as a heading when the text does not begin with a
    heading of its own (a page whose title is its only name, such as a builder's page
    styled without ``<h1>``), so its chunks carry the title in their heading path."""
    if not title or text.lstrip().startswith("#"):
        return text
    return f"# {title}\n\n{text}"


class _PageReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.base: str | None = None
        self.canonical: str | None = None
        self.noindex = False
        self.nofollow = False
        self.title: list[str] = []
        self.in_title = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        rel = found.get("rel", "").lower().split()
        if tag == "title" and not self.title:
            self.in_title = True
        elif tag in ("a", "area") and "href" in found and "nofollow" not in rel:
            self.links.append(found["href"])
        elif tag == "base" and "href" in found and self.base is None:
            self.base = found["href"]
        elif tag == "link" and "canonical" in rel and found.get("href"):
            self.canonical = self.canonical or found["href"]
        elif tag == "meta" and found.get("name", "").lower() in ("robots", "ragchat"):
            noindex, nofollow = robots_header(found.get("content", ""))
            self.noindex |= noindex
            self.nofollow |= nofollow

    handle_startendtag = handle_starttag


@attrs.frozen
class Sitemap:
    """The addresses a sitemap lists, and whether it is an index (its addresses are
    sitemaps)."""

    urls: tuple[str, ...]
    index: bool


def sitemap_urls(text: str, url: str) -> Sitemap:
    """The page (or sitemap) addresses of the sitemap ``text`` fetched at ``url``."""
    found: dict[str, None] = {}
    for match in _LOC.finditer(text):
        raw = match.group(1)
        cdata = _CDATA.match(raw)
        loc = normal_url(html.unescape(cdata.group(1) if cdata else raw), url)
        if loc is not None:
            found[loc] = None
            if len(found) >= MAX_SITEMAP_URLS:
                break
    return Sitemap(tuple(found), bool(_SITEMAP_INDEX.search(text[:4096])))


#: the longest document name (ragcore.knowledge.documents.MAX_NAME_CHARS)
_NAME_CHARS = 255


def document_name(url: str) -> str:
    """The name of the document a page becomes: its address (one page, one name, so a
    changed page replaces its document), shortened past 255 characters with a hash of
    the whole kept, so two long addresses stay two names."""
    if len(url) <= _NAME_CHARS:
        return url
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return f"{url[: _NAME_CHARS - 18]}…#{digest}"
