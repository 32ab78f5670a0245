"""A fake paginated JSON API on 127.0.0.1: ``GET /v1/customers`` behind one header
(``header``: ``value``), paged ``page_size`` at a time in one of the styles the REST
connector follows (``style``):

- ``link``: a list body, the next page in ``Link: <…?page=N>; rel="next"``;
- ``next``: ``{"results": [...], "next": "<absolute URL or null>"}`` (Django REST style);
- ``cursor``: ``{"data": [...], "next_cursor": "…"}``, the next page asked for as
  ``?cursor=…``;
- ``nested``: ``{"result": {"rows": [...]}, "links": {"next": "/v1/customers?page=N"}}``.

``delay`` (seconds) is spent on every page (the benchmark uses 50 ms); ``next_origin``
makes the next-page links point at another origin; ``redirect_to`` answers
with a 302 there; ``garbage = "html"`` answers with a captive portal's page. A wrong header gets
``{"message": "Bad credentials: <what was sent>"}`` (an API that echoes the token, so the
tests see it masked).

``streamed`` (bytes) makes every answer a JSON list of that many bytes and more, sent in
chunks with no Content-Length, as a source answering a huge body does.

One item, ``GET /v1/customers/{id}``: the item whose id is that one path segment, as
sent percent-encoded (``%2F`` is part of the id, not a new segment), or a 404 whose
message quotes the id;
``?email=`` on the listing keeps the items with that e-mail."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import unquote

from tests.io.fakes.asgi import (
    HTML_PAGE,
    Failure,
    FakeServer,
    Recorded,
    Send,
    WireError,
    encode_headers,
)

STYLES = ("link", "next", "cursor", "nested")


class RestError(WireError):
    def __init__(self, status: int, message: str):
        super().__init__(status, message, {"message": message}, None)


def item(n: int) -> dict[str, Any]:
    return {"id": n, "email": f"user{n}@example.org", "name": f"User {n}"}


class FakeRestApi(FakeServer):
    def __init__(
        self,
        header: str,
        value: str,
        items: int = 0,
        *,
        style: str = "link",
        page_size: int = 10,
        delay: float = 0.0,
    ) -> None:
        super().__init__(api_key=value, reply="")
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}")
        self.header = header.lower()
        self.items = [item(n) for n in range(items)]
        self.style = style
        self.page_size = page_size
        self.delay = delay
        self.next_origin: str | None = None
        self.path = "/v1/customers"
        self.redirect_to: str | None = None  # answer 302 with this Location instead
        self.streamed = 0  # bytes: answer every request with a list this large, in chunks

    async def _answer(self, request: Recorded, send: Send) -> None:
        sent = request.headers.get(self.header)
        if sent != self.api_key:
            raise RestError(401, f"Bad credentials: {sent or 'none'}")
        await self._scripted()
        if self.streamed:
            await self._stream(send)
            return
        raw = request.raw_path.decode("latin-1")
        if request.method == "GET" and raw.startswith(self.path + "/"):
            segment = raw[len(self.path) + 1 :]
            wanted = unquote(segment) if "/" not in segment else None
            found = [i for i in self.items if str(i["id"]) == wanted]
            if not found:  # as many APIs do, the message quotes what was asked for
                raise RestError(404, f"No customer with id {wanted}")
            await self._send_json(send, 200, found[0])
            return
        if request.path != self.path or request.method != "GET":
            raise RestError(404, "Not Found")
        if self.redirect_to is not None:
            await self._start(send, 302, {"location": self.redirect_to})
            await send({"type": "http.response.body", "body": b""})
            return
        if self.garbled(request) == "html":
            await self._send_raw(send, "text/html", HTML_PAGE)
            return
        if self.style == "cursor":
            cursor = request.query.get("cursor", [None])[0]
            start = int(base64.b64decode(cursor)) if cursor else 0
        else:
            start = (int(request.query.get("page", ["1"])[0]) - 1) * self.page_size
        items = self.items
        if "email" in request.query:
            items = [i for i in items if i["email"] == request.query["email"][0]]
        page = items[start : start + self.page_size]
        more = start + self.page_size < len(items)
        following = start // self.page_size + 2
        origin = self.next_origin or self.base_url
        url = f"{origin}{self.path}?page={following}"
        headers = {"content-type": "application/json"}
        body: Any
        if self.style == "link":
            body = page
            if more:
                headers["link"] = f'<{url}>; rel="next", <{origin}{self.path}?page=1>; rel="first"'
        elif self.style == "next":
            body = {"count": len(items), "results": page, "next": url if more else None}
        elif self.style == "cursor":
            token = base64.b64encode(str(start + self.page_size).encode()).decode()
            body = {"data": page, "next_cursor": token if more else None}
        else:
            link = (url if self.next_origin else f"{self.path}?page={following}") if more else None
            body = {"result": {"rows": page}, "links": {"next": link}}
        await send(
            {"type": "http.response.start", "status": 200, "headers": encode_headers(headers)}
        )
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})

    async def _stream(self, send: Send) -> None:
        """A list of padded records, ``streamed`` bytes and more, 64 kB a chunk."""
        await self._start(send, 200, {"content-type": "application/json"})
        record = json.dumps({**item(0), "pad": "x" * 65_000}).encode()
        parts = [b"[", *[record + b","] * (self.streamed // len(record)), record + b"]"]
        for part in parts:
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    def _failure(self, failure: Failure) -> WireError:
        error = RestError(
            failure.status, "Too Many Requests" if failure.status == 429 else "Service Unavailable"
        )
        error.headers = failure.headers
        return error
