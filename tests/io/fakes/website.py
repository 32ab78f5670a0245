"""A website on 127.0.0.1 for the crawler: a folder of files served as a static web server
serves them, plus the misbehaving pages a crawler meets.

- Each file is served with an ``ETag`` (a hash of its bytes) and a ``Last-Modified`` (its
  modification time); ``If-None-Match`` or ``If-Modified-Since`` that still hold are
  answered ``304 Not Modified`` with no body, as nginx and Apache do.
- ``redirects``: a path answered ``301`` to a location (a loop, another host, …).
- ``slow``: paths answered 200 whose body trickles a byte every ``SLOW_EVERY`` seconds and
  never ends (a slow-loris).
- ``huge``: paths answered 200 with this many bytes of HTML, streamed without a
  Content-Length.
- ``delay``: seconds each file's answer is held, so overlapping requests can be counted
  (``most_in_flight``).
- ``failing``: paths answered ``503 Service Unavailable``.
- Every request is recorded (path, status, the body's size, when it came).
"""

from __future__ import annotations

import hashlib
import mimetypes
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

import attrs
import trio

from tests.io.fakes.asgi import lifespan

SLOW_EVERY = 0.5
PIECE = 256 * 1024


@attrs.frozen
class Served:
    path: str
    status: int
    body_bytes: int
    headers: dict[str, str]
    at: float = 0.0  # trio.current_time() when the request came (files only)


@attrs.define
class FakeWebsite:
    root: Path
    redirects: dict[str, str] = attrs.Factory(dict)
    slow: set[str] = attrs.Factory(set)
    huge: dict[str, int] = attrs.Factory(dict)
    failing: set[str] = attrs.Factory(set)  # paths answered 503
    served: list[Served] = attrs.Factory(list)
    #: seconds each file's answer is held before it is sent (to see requests overlap)
    delay: float = 0.0
    in_flight: int = 0
    most_in_flight: int = 0
    base_url: str = ""
    base_path: str = ""

    def close(self) -> None:
        return None

    def pages_served(self) -> list[str]:
        return [s.path for s in self.served if s.path != "/robots.txt"]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        arrived = trio.current_time()
        path = scope["path"]
        if path in self.redirects:
            location = {"location": self.redirects[path]}
            await self._answer(send, path, headers, 301, location, b"", arrived)
        elif path in self.failing:
            await self._answer(send, path, headers, 503, {}, b"", arrived)
        elif path in self.slow:
            await self._trickle(send, path, headers)
        elif path in self.huge:
            await self._huge(send, path, headers, self.huge[path])
        else:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await trio.sleep(self.delay)
                await self._file(send, path, headers, arrived)
            finally:
                self.in_flight -= 1

    async def _file(self, send: Any, path: str, asked: dict[str, str], arrived: float) -> None:
        target = (self.root / path.lstrip("/")).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_relative_to(self.root.resolve()) or not target.is_file():
            missing = {"content-type": "text/html"}
            await self._answer(send, path, asked, 404, missing, b"<h1>404</h1>", arrived)
            return
        data = target.read_bytes()
        etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
        modified = int(target.stat().st_mtime)
        headers = {
            "etag": etag,
            "last-modified": formatdate(modified, usegmt=True),
            "content-type": (mimetypes.guess_type(target.name)[0] or "application/octet-stream")
            + ("; charset=utf-8" if target.suffix in (".html", ".txt", ".xml") else ""),
        }
        if _not_modified(asked, etag, modified):
            await self._answer(send, path, asked, 304, headers, b"", arrived)
            return
        await self._answer(send, path, asked, 200, headers, data, arrived)

    async def _answer(
        self, send: Any, path: str, asked: dict[str, str], status: int, headers: dict[str, str],
        body: bytes, arrived: float,
    ) -> None:  # fmt: skip
        self.served.append(Served(path, status, len(body), asked, arrived))
        sent = {**headers, "content-length": str(len(body))}
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in sent.items()],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _trickle(self, send: Any, path: str, asked: dict[str, str]) -> None:
        self.served.append(Served(path, 200, 0, asked))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/html")],
            }
        )
        await send({"type": "http.response.body", "body": b"<html><body><p>", "more_body": True})
        while True:
            await trio.sleep(SLOW_EVERY)
            await send({"type": "http.response.body", "body": b"a", "more_body": True})

    async def _huge(self, send: Any, path: str, asked: dict[str, str], size: int) -> None:
        self.served.append(Served(path, 200, size, asked))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/html")],
            }
        )
        piece = b"<p>" + b"x" * (PIECE - 7) + b"</p>\n"
        for _ in range(size // len(piece)):
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def _not_modified(asked: dict[str, str], etag: str, modified: int) -> bool:
    """RFC 9110: If-None-Match decides when sent; else If-Modified-Since."""
    if "if-none-match" in asked:
        return etag in [tag.strip() for tag in asked["if-none-match"].split(",")]
    since = asked.get("if-modified-since")
    if since:
        try:
            return modified <= parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError):
            return False
    return False
