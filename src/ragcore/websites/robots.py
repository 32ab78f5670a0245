"""What a site's ``robots.txt`` lets the crawler (user agent ``ragchat``) fetch, read as
RFC 9309 says; pure.

- The group for ``ragchat`` (matched case-insensitively, several ``user-agent`` lines may
  open one group, and groups of the same agent are merged) applies; without one, the
  ``*`` group; without either, everything is allowed.
- A path is judged by the rule with the longest matching pattern; on a tie ``allow``
  wins. ``*`` matches any characters and a final ``$`` the end of the path; an empty
  ``disallow`` allows everything. Patterns and paths are compared %-decoded except for
  the characters that change meaning (``/ ? = &`` and ``%`` itself).
- ``/robots.txt`` itself is always allowed.
- ``crawl-delay`` (not in the RFC, honoured by most crawlers) is read from the group.
- A robots.txt that could not be fetched is read by its status: 4xx means no rules
  (``ALLOW_ALL``); a 5xx or no answer means nothing may be fetched (``DISALLOW_ALL``),
  as the RFC requires, until a later crawl reads it.

Only the first ``MAX_ROBOTS_BYTES`` are read (the RFC asks for at least 500 KiB).
"""

from __future__ import annotations

import re

import attrs

AGENT = "ragchat"
MAX_ROBOTS_BYTES = 512 * 1024
#: the longest crawl-delay honoured: a site asking for more is crawled at this pace
MAX_CRAWL_DELAY = 60.0
_LINE = re.compile(r"^\s*([A-Za-z-]+)\s*:\s*(.*?)\s*$")
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
_KEEP_ENCODED = frozenset({b"2F", b"3F", b"3D", b"26", b"25"})  # / ? = & %


@attrs.frozen
class Rule:
    allow: bool
    pattern: str
    regex: re.Pattern[str]


@attrs.frozen
class Robots:
    """The rules that apply to this crawler on one host, its crawl-delay (seconds, None:
    none asked) and the sitemaps the file lists. ``refused``: why nothing may be fetched
    (the file could not be read), or empty."""

    rules: tuple[Rule, ...] = ()
    crawl_delay: float | None = None
    sitemaps: tuple[str, ...] = ()
    refused: str = ""

    def allows(self, path: str) -> bool:
        """Whether the crawler may fetch ``path`` (the URL's path and query)."""
        if self.refused:
            return False
        path = _normal(path or "/")
        if path == "/robots.txt":
            return True
        best: Rule | None = None
        for rule in self.rules:
            if rule.regex.match(path) and (
                best is None
                or len(rule.pattern) > len(best.pattern)
                or (len(rule.pattern) == len(best.pattern) and rule.allow and not best.allow)
            ):
                best = rule
        return best is None or best.allow


ALLOW_ALL = Robots()


def unreadable(reason: str) -> Robots:
    """The robots of a host whose robots.txt answered 5xx or not at all: nothing allowed."""
    return Robots(refused=f"its robots.txt could not be read, so nothing is fetched ({reason})")


def parse(text: str, agent: str = AGENT) -> Robots:
    """The rules of ``text`` (a robots.txt) for ``agent``."""
    groups: list[tuple[list[str], list[tuple[str, str]]]] = []
    sitemaps: list[str] = []
    agents: list[str] = []
    lines: list[tuple[str, str]] = []
    for raw in text[:MAX_ROBOTS_BYTES].splitlines():
        match = _LINE.match(raw.split("#", 1)[0])
        if not match:
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key == "sitemap":
            if value:
                sitemaps.append(value)
            continue
        if key == "user-agent":
            if lines:  # a user-agent line after rules opens a new group
                groups.append((agents, lines))
                agents, lines = [], []
            agents.append(value.lower())
        elif key in ("allow", "disallow", "crawl-delay") and agents:
            lines.append((key, value))
    if agents:
        groups.append((agents, lines))
    mine = [ls for names, ls in groups if agent.lower() in names]
    if not mine:
        mine = [ls for names, ls in groups if "*" in names]
    rules: list[Rule] = []
    delay: float | None = None
    for key, value in (pair for group in mine for pair in group):
        if key == "crawl-delay":
            try:
                delay = min(max(float(value), 0.0), MAX_CRAWL_DELAY)
            except ValueError:
                continue
        elif value:
            pattern = _normal(value)
            rules.append(Rule(key == "allow", pattern, _regex(pattern)))
    return Robots(tuple(rules), delay, tuple(sitemaps))


def _normal(path: str) -> str:
    """``path`` as bytes (in a latin-1 string), %-escapes decoded but those whose decoding
    changes the path's meaning (``_KEEP_ENCODED``), which are kept in upper case."""

    def escape(match: re.Match[bytes]) -> bytes:
        code = match.group(1).upper()
        return b"%" + code if code in _KEEP_ENCODED else bytes([int(code, 16)])

    return _ESCAPE.sub(escape, path.encode("utf-8")).decode("latin-1")


def _regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    parts = (re.escape(part) for part in body.split("*"))
    return re.compile(".*".join(parts) + ("$" if anchored else ""), re.S)
