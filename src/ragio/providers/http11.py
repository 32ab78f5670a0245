"""A lean HTTP/1.1 client for the provider calls of every answer (ragio.providers.openai_http).

httpx2 costs about 0.75 ms of CPU a call on this machine (its request and response models,
event hooks, redirect and auth handling, httpcore2's pool and h11's parser): about a tenth
of an answer's CPU, for two calls an answer (measured with py-spy under
``scripts/bench_load.py --profile``). This client does what those calls need and nothing
more: a POST of bytes on kept-alive connections to one origin, its response's head parsed
once, its body framed by Content-Length or chunks (or the connection's end), and the body
checked as it arrives by ragio.providers.wire's ``_Body`` (the same limit, gzip, UTF-8
and cut-off checks as on httpx's clients).

It is used only where httpx2 would have made a plain connection itself: the SDK client's
own httpx2 client, with ragio.providers.wire's hooks and no proxy for the URL (``for_client``
says); its TLS context is httpx2's. Anything else (a proxy from the environment, an
injected client) keeps going through httpx2.

Failures are two exceptions, as httpx's: ``TimedOut`` (connecting, sending or a wait for
the next bytes took longer than the timeout) and ``ConnectionFailed`` (no response: the
connection could not be made, broke, or the server sent no HTTP). A kept-alive connection
the server closed while idle is noticed before use, and a request whose reused connection
ends before any byte of a response is sent once more on a new one, as browsers do.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
import trio

from ragio.providers.wire import Check

#: the most a response's head may take (status line and headers)
MAX_HEAD_BYTES = 64 * 1024
#: kept-alive connections kept idle at most (the openai SDK's client keeps 100)
MAX_IDLE = 100
RECEIVE_BYTES = 64 * 1024
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_NO_BODY = (204, 304)


class TimedOut(Exception):
    """Connecting, sending, or waiting for the next bytes of a response took too long."""


class ConnectionFailed(Exception):
    """No response: the connection could not be made or broke, or what came is no HTTP."""


class CutOff(ConnectionFailed):
    """The connection ended before the body's end (``_Body`` refuses the reply for it)."""


class _Connection:
    def __init__(self, stream: trio.abc.Stream, sock: Any) -> None:
        self.stream, self.sock = stream, sock
        self.buffer = b""
        self.used = False
        self.received = 0  # bytes, over the connection's life

    def stale(self) -> bool:
        """An idle connection with something to read: closed by the server (or junk)."""
        try:
            return bool(self.sock.is_readable())
        except OSError:
            return True

    async def receive(self, timeout: float) -> bytes:
        try:
            with trio.fail_after(timeout):
                data = bytes(await self.stream.receive_some(RECEIVE_BYTES))
                self.received += len(data)
                return data
        except trio.TooSlowError:
            raise TimedOut("no bytes within the timeout") from None
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as error:
            raise ConnectionFailed(f"the connection broke: {type(error).__name__}") from None

    async def send(self, data: bytes, timeout: float) -> None:
        try:
            with trio.fail_after(timeout):
                await self.stream.send_all(data)
        except trio.TooSlowError:
            raise TimedOut("the request could not be sent within the timeout") from None
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as error:
            raise ConnectionFailed(f"the connection broke: {type(error).__name__}") from None

    async def close(self) -> None:
        await trio.aclose_forcefully(self.stream)


class Http11:
    """POSTs to one origin (``base``, an httpx2.URL) over kept-alive connections."""

    def __init__(
        self,
        base: httpx2.URL,
        headers: Mapping[str, str],
        ssl_context: ssl.SSLContext | None,
        timeout: float,
        check: Check,
    ) -> None:
        self.host = base.raw_host.decode("ascii")  # IDNA-encoded; an IPv6 address bare
        self.port = base.port or (443 if base.scheme == "https" else 80)
        self.tls = ssl_context if base.scheme == "https" else None
        self.timeout = timeout
        self.check = check
        fields = {"Host": base.netloc.decode("ascii"), **headers}
        fields.update({"Accept-Encoding": "gzip", "Connection": "keep-alive"})
        self.head_fields = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode()
        self.idle: list[_Connection] = []

    @classmethod
    def for_client(
        cls, client: Any, base_url: str, headers: Mapping[str, str], timeout: float
    ) -> Http11 | None:
        """The lean client for ``client``'s plain connections to ``base_url``; None when
        httpx2 would do more than connect (a proxy, hooks of others, another transport)."""
        if not isinstance(client, httpx2.AsyncClient):
            return None
        check = Check.of(client)
        base = httpx2.URL(base_url)
        transport = client._transport_for_url(base)
        plain = transport is client._transport and base.scheme in ("http", "https")
        if check is None or not plain:
            return None
        pool = getattr(transport, "_pool", None)
        if (
            type(transport) is not httpx2.AsyncHTTPTransport
            or pool is None
            or getattr(pool, "_http2", True)
            or getattr(pool, "_uds", None) is not None
            or getattr(pool, "_local_address", None) is not None
            or getattr(pool, "_socket_options", None)
        ):
            return None
        texts = [base_url, *headers, *headers.values()]
        if any(c in text for text in texts for c in "\r\n\0") or not base.host:
            return None  # httpx2 says what is wrong with them
        return cls(base, headers, pool._ssl_context, timeout, check)

    async def post(self, url: httpx2.URL, body: bytes) -> Response:
        """The response's head, its body to be read (``Response``); TimedOut or
        ConnectionFailed when none came. ``url`` is on the origin of the base URL."""
        request = b"".join(
            (
                b"POST ",
                url.raw_path,
                b" HTTP/1.1\r\n",
                self.head_fields,
                b"Content-Length: %d\r\n\r\n" % len(body),
                body,
            )
        )
        while True:
            conn = await self._connection()
            reused, received = conn.used, conn.received
            conn.used = True
            try:
                await conn.send(request, self.timeout)
                status, version, headers = await self._head(conn)
                return Response(self, conn, url, status, version, headers)  # its head checked
            except ConnectionFailed:
                await conn.close()
                if reused and conn.received == received:
                    continue  # closed by the server as it was taken: once more, on a new one
                raise
            except BaseException:
                await conn.close()
                raise

    async def _connection(self) -> _Connection:
        while self.idle:
            conn = self.idle.pop()
            if not conn.stale():
                return conn
            await conn.close()
        try:
            with trio.fail_after(self.timeout):
                tcp = await trio.open_tcp_stream(self.host, self.port)
                stream: trio.abc.Stream = tcp
                if self.tls is not None:
                    stream = trio.SSLStream(
                        tcp, self.tls, server_hostname=self.host, https_compatible=True
                    )
                    try:
                        await stream.do_handshake()
                    except BaseException:
                        await trio.aclose_forcefully(tcp)
                        raise
        except trio.TooSlowError:
            raise TimedOut(f"no connection to {self.host} within the timeout") from None
        except (OSError, trio.BrokenResourceError) as error:
            raise ConnectionFailed(f"no connection to {self.host}: {error}") from None
        return _Connection(stream, tcp.socket)

    async def _head(self, conn: _Connection) -> tuple[int, str, list[tuple[str, str]]]:
        """The status, HTTP version and headers of the next final response (1xx skipped)."""
        while True:
            while (end := _HEAD_END.search(conn.buffer)) is None:
                if len(conn.buffer) > MAX_HEAD_BYTES:
                    raise ConnectionFailed("a response head larger than 64 KB")
                data = await conn.receive(self.timeout)
                if not data:
                    raise ConnectionFailed("the server closed the connection without a response")
                conn.buffer += data
            head, conn.buffer = conn.buffer[: end.start()], conn.buffer[end.end() :]
            status, version, headers = _parsed_head(head)
            if status >= 200:
                return status, version, headers

    def give_back(self, conn: _Connection) -> None:
        """A connection whose response was read to its end, kept alive by both sides."""
        if len(self.idle) < MAX_IDLE and not conn.buffer:
            self.idle.append(conn)
        else:  # more idle than kept, or bytes after the response: not to be reused
            conn.sock.close()

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.close()


def _parsed_head(head: bytes) -> tuple[int, str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").splitlines()
    parts = lines[0].split(" ", 2) if lines else []
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ConnectionFailed("a response that is not HTTP/1.1")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ConnectionFailed("a response header that is not a header")
        headers.append((name.lower(), value.strip()))
    return int(parts[1]), parts[0], headers


class Response:
    """A response's head, and its body as it arrives (checked: ``Check.body``).

    The connection goes back to the pool when the body has been read to its end and
    both sides keep it alive; ``aclose`` before that closes it."""

    def __init__(
        self,
        client: Http11,
        conn: _Connection,
        url: httpx2.URL,
        status: int,
        version: str,
        headers: list[tuple[str, str]],
    ) -> None:
        self.status_code = status
        self.http_version = version
        self.raw_headers = headers
        self.is_success = 200 <= status < 300
        self.is_closed = False
        self.content = b""
        self._client, self._conn, self.url = client, conn, url
        self._headers: httpx2.Headers | None = None
        values = {name: value for name, value in headers}  # the last of each, for framing
        tokens = {t.strip().lower() for t in values.get("connection", "").split(",")}
        self._keep_alive = version == "HTTP/1.1" and "close" not in tokens
        encoding = values.get("transfer-encoding", "").lower()
        self._chunked = encoding.rsplit(",", 1)[-1].strip() == "chunked"
        length = values.get("content-length")
        self._length = int(length) if length is not None and length.isdigit() else None
        if status in _NO_BODY:
            self._length = 0
        if not self._chunked and self._length is None:
            self._keep_alive = False  # read to the connection's end
        encodings = [v for n, v in headers if n == "content-encoding"]
        gzipped = client.check.head(status, encodings, length or "", _charset(values))
        self.stream = client.check.body(_RawBody(self), status, gzipped, CutOff)

    @property
    def headers(self) -> httpx2.Headers:
        if self._headers is None:
            self._headers = httpx2.Headers(self.raw_headers)
        return self._headers

    @property
    def request(self) -> httpx2.Request:
        """What the SDK's errors name (made only for one)."""
        return httpx2.Request("POST", self.url)

    async def aread(self) -> bytes:
        self.content = b"".join([piece async for piece in self.stream])
        return self.content

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return self.stream.__aiter__()

    async def aclose(self) -> None:
        if not self.is_closed:
            self.is_closed = True
            await self._conn.close()

    def _ended(self) -> None:
        """The body was read to its end: the connection is free."""
        if not self.is_closed:
            self.is_closed = True
            if self._keep_alive:
                self._client.give_back(self._conn)
            else:
                self._conn.sock.close()

    def as_httpx(self) -> httpx2.Response:
        """The response (its body read) as httpx2's, for the SDK's errors and retry rules."""
        # the body as read: decompressed, and checked or mended to UTF-8 (labelled so)
        headers = [
            (n, v) for n, v in self.raw_headers if n not in ("content-encoding", "content-length")
        ]
        declared = dict(self.raw_headers)
        if _charset(declared) is not None:
            media_type = declared["content-type"].split(";")[0].strip()
            headers = [(n, v) for n, v in headers if n != "content-type"]
            headers.append(("content-type", f"{media_type}; charset=utf-8"))
        return httpx2.Response(
            self.status_code, headers=headers, content=self.content, request=self.request
        )


class _RawBody:
    """A response's body as the connection gives it, framed, for ``Check.body``. Read
    again, it goes on where it was left (the rest of a stream after its last event)."""

    def __init__(self, response: Response) -> None:
        self.response = response
        self._pieces: AsyncIterator[bytes] | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        if self._pieces is None:
            self._pieces = self._framed()
        return self._pieces

    async def _framed(self) -> AsyncIterator[bytes]:
        response = self.response
        if response._chunked:
            async for piece in self._chunks():
                yield piece
        elif response._length is not None:
            async for piece in self._exactly(response._length):
                yield piece
        else:
            async for piece in self._to_the_end():
                yield piece
        response._ended()

    async def _more(self) -> None:
        conn = self.response._conn
        data = await conn.receive(self.response._client.timeout)
        if not data:
            raise CutOff("the connection ended before the body's end")
        conn.buffer += data

    async def _exactly(self, size: int) -> AsyncIterator[bytes]:
        conn = self.response._conn
        while size > 0:
            if not conn.buffer:
                await self._more()
            piece, conn.buffer = conn.buffer[:size], conn.buffer[size:]
            size -= len(piece)
            yield piece

    async def _line(self) -> bytes:
        conn = self.response._conn
        while (end := conn.buffer.find(b"\n")) < 0:
            if len(conn.buffer) > MAX_HEAD_BYTES:
                raise ConnectionFailed("a chunk's size line larger than 64 KB")
            await self._more()
        line, conn.buffer = conn.buffer[:end], conn.buffer[end + 1 :]
        return line.rstrip(b"\r")

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            size_text = (await self._line()).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ConnectionFailed("a chunk size that is not hexadecimal") from None
            if size == 0:
                while await self._line():  # trailers, to the blank line
                    pass
                return
            async for piece in self._exactly(size):
                yield piece
            if await self._line():
                raise ConnectionFailed("a chunk longer than its size")

    async def _to_the_end(self) -> AsyncIterator[bytes]:
        conn = self.response._conn
        if conn.buffer:
            piece, conn.buffer = conn.buffer, b""
            yield piece
        while data := await conn.receive(self.response._client.timeout):
            yield data

    async def aclose(self) -> None:
        await self.response.aclose()


def _charset(headers: Mapping[str, str]) -> str | None:
    """The charset a Content-Type declares, as httpx reads it; None without one."""
    content_type = headers.get("content-type")
    if content_type is None:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("'\"")
    return None
