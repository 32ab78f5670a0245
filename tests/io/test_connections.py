"""How connections end, as a client sees it, with the app served as in production: a
`Connection: close` or HTTP/1.0 request is answered and closed; an idle or slow connection
is closed after its timeout."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import trio

from ragio.server import hypercorn_config
from tests.io.conftest import serve_service

KEY = "connection-test-key-0123456789"
READ_TIMEOUT = 0.5  # the keep-alive timeout here, so that the tests are quick
SETTINGS = {"service_api_key": KEY}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return dict(SETTINGS)


@pytest.fixture
async def port(service: Any, nursery: trio.Nursery) -> AsyncIterator[int]:
    """The app served with the production Hypercorn config on a free port."""
    url, stop = await serve_service(service, nursery)
    yield int(url.rsplit(":", 1)[1])
    stop.set()


@pytest.fixture
async def quick_keep_alive_port(service: Any, nursery: trio.Nursery) -> AsyncIterator[int]:
    """The same, with the keep-alive timeout (5 s in production) cut to READ_TIMEOUT."""
    config = hypercorn_config(service.settings)
    config.keep_alive_timeout = READ_TIMEOUT
    url, stop = await serve_service(service, nursery, config)
    yield int(url.rsplit(":", 1)[1])
    stop.set()


# ---------------------------------------------------------------- a raw HTTP/1.1 client


class Conn:
    """A client socket that reads responses and notices how the server ends it."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _more(self) -> bytes:
        data = await self.stream.receive_some(65536)
        self.buffer += data
        return data

    async def response(self, within: float = 2) -> tuple[int, dict[str, str], bytes]:
        """The next whole response (it must have a Content-Length): status, headers, body."""
        with trio.fail_after(within):
            while b"\r\n\r\n" not in self.buffer:
                assert await self._more(), f"closed before a response: {self.buffer!r}"
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
            status_line, *lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers["content-length"])
            while len(rest) < length:
                assert await self._more(), "closed in the middle of a response body"
                rest = self.buffer.partition(b"\r\n\r\n")[2]
        self.buffer = rest[length:]
        return int(status_line.split()[1]), headers, rest[:length]

    async def closed(self, within: float = 2) -> None:
        """The server closes the connection within ``within`` seconds, cleanly (a FIN, not a
        reset) and without sending anything more."""
        with trio.fail_after(within):
            while await self._more():
                pass
        assert self.buffer == b"", f"more after the response: {self.buffer!r}"

    async def closed_while_sending(self, data: bytes, every: float, within: float) -> None:
        """Send ``data`` a byte at a time, one each ``every`` seconds: the server must close
        the connection (a FIN or a reset) within ``within`` seconds."""
        with trio.fail_after(within):
            for byte in data:
                try:
                    await self.send(bytes([byte]))
                    with trio.move_on_after(every):
                        if not await self._more():
                            return
                except trio.BrokenResourceError:
                    return
        pytest.fail("the server took all of it")


@pytest.fixture
async def connect() -> AsyncIterator[Callable[[int], Awaitable[Conn]]]:
    opened: list[trio.SocketStream] = []

    async def open_conn(to: int) -> Conn:
        stream = await trio.open_tcp_stream("127.0.0.1", to)
        opened.append(stream)
        return Conn(stream)

    yield open_conn
    for stream in opened:
        await stream.aclose()


def request(method: str, path: str, *headers: str, body: bytes = b"", version="1.1") -> bytes:
    lines = [f"{method} {path} HTTP/{version}", "Host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


HEALTH = request("GET", "/health")


# ---------------------------------------------------------------- the client asks to close


async def test_connection_close_is_answered_then_closed(connect, port):
    conn = await connect(port)
    await conn.send(request("GET", "/health", "Connection: close"))
    status, headers, _ = await conn.response()
    assert status == 200 and headers["connection"] == "close"
    await conn.closed()


async def test_an_http_1_0_request_is_answered_then_closed(connect, port):
    conn = await connect(port)
    await conn.send(request("GET", "/health", version="1.0"))
    status, _, _ = await conn.response()
    assert status == 200
    await conn.closed()


async def test_a_kept_alive_connection_answers_the_next_request(connect, port):
    conn = await connect(port)
    for _ in range(3):
        await conn.send(HEALTH)
        status, headers, _ = await conn.response()
        assert status == 200 and "connection" not in headers


# ---------------------------------------------------------------- timeouts


async def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive_timeout(
    connect, quick_keep_alive_port
):
    conn = await connect(quick_keep_alive_port)
    await conn.send(HEALTH)
    assert (await conn.response())[0] == 200
    await conn.closed(within=READ_TIMEOUT + 1)


async def test_a_request_head_sent_slowly_is_cut_off_by_the_keep_alive_timeout(
    connect, quick_keep_alive_port
):
    """Slowloris: the head of the next request, a byte at a time, must be whole within the
    keep-alive timeout from the end of the previous answer."""
    conn = await connect(quick_keep_alive_port)
    await conn.send(HEALTH)
    assert (await conn.response())[0] == 200
    await conn.closed_while_sending(HEALTH[:-2], every=0.05, within=READ_TIMEOUT + 1)
    assert conn.buffer == b""
