"""How connections end, as a client sees it, with the app served as in production: a
`Connection: close` or HTTP/1.0 request is answered and closed; an idle or slow connection
is closed after its timeout; a body that stops arriving gets 408; an answer given without
reading the body (413, 401) says `Connection: close` and reaches the client whole, and the
client's next request (on a new connection) is answered."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio

from ragio.http import connections
from ragio.server import hypercorn_config
from tests.io.conftest import on_openai, serve_service
from tests.io.fakes.openai_server import FakeOpenAI

KEY = "connection-test-key-0123456789"
READ_TIMEOUT = 0.5  # HTTP_READ_TIMEOUT_SECONDS here, so that the tests are quick
LIMIT = 1000  # MAX_UPLOAD_BYTES here: the body limit is this plus the multipart headroom
MB = b"x" * 1_000_000
SETTINGS = {
    "service_api_key": KEY,
    "http_read_timeout_seconds": READ_TIMEOUT,
    "max_upload_bytes": LIMIT,
    "telegram_webhook_secret": "telegram-secret",
    "discord_public_key": "ab" * 32,
}


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


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/documents", (f"X-API-Key: {KEY}", "Content-Type: application/json")),
        ("/webhook/discord", ("Content-Type: application/json",)),
        ("/webhook/telegram", ("X-Telegram-Bot-Api-Secret-Token: telegram-secret",)),
    ],
)
async def test_a_body_shorter_than_its_content_length_gets_408_within_the_read_timeout(
    connect, port, path, headers
):
    conn = await connect(port)
    start = trio.current_time()
    await conn.send(request("POST", path, *headers, "Content-Length: 100", body=b'{"a": 1'))
    status, response_headers, body = await conn.response(within=READ_TIMEOUT + 1)
    assert trio.current_time() - start >= READ_TIMEOUT
    assert status == 408 and response_headers["connection"] == "close"
    assert response_headers["content-type"] == "application/problem+json"
    assert "HTTP_READ_TIMEOUT_SECONDS" in json.loads(body)["detail"]
    await conn.closed()


async def test_a_slow_body_that_keeps_coming_is_not_cut_off(connect, port):
    """The read timeout is for silence, not for the whole upload."""
    conn = await connect(port)
    body = json.dumps({"name": "slow.md", "text": " " * 20}).encode()  # read whole, refused
    await conn.send(
        request(
            "POST",
            "/documents",
            f"X-API-Key: {KEY}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
        )
    )
    pieces = [body[:10], body[10:20], body[20:30], body[30:]]
    for piece in pieces:  # 4 x 0.3 s: longer than the read timeout in all
        await trio.sleep(READ_TIMEOUT * 0.6)
        await conn.send(piece)
    status, _, answer = await conn.response()
    assert status == 422 and json.loads(answer)["field"] == "text", answer


# ---------------------------------------------------------------- answers without the body


@pytest.mark.parametrize("secret", [None, "wrong-secret"])
async def test_a_telegram_request_without_its_secret_is_refused_before_its_body_arrives(
    connect, port, secret
):
    """A stranger trickling a body (a byte more often than the read timeout) to the open
    webhook is refused on its headers, not after the body it never finishes."""
    conn = await connect(port)
    headers = ["Content-Type: application/json", "Content-Length: 1000"]
    if secret is not None:
        headers.append(f"X-Telegram-Bot-Api-Secret-Token: {secret}")
    await conn.send(request("POST", "/webhook/telegram", *headers))

    async def trickle() -> None:
        try:
            for _ in range(1000):
                await conn.send(b" ")
                await trio.sleep(READ_TIMEOUT / 5)
        except trio.BrokenResourceError:
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trickle)
        status, headers_back, body = await conn.response(within=READ_TIMEOUT)
        nursery.cancel_scope.cancel()
    assert status == 403 and headers_back["connection"] == "close"
    assert "telegram request is not verified" in json.loads(body)["detail"]


async def test_after_a_413_the_connection_is_closed_cleanly_saying_so(connect, port):
    conn = await connect(port)
    await conn.send(
        request(
            "POST",
            "/documents",
            f"X-API-Key: {KEY}",
            "Content-Type: application/json",
            "Content-Length: 10000000",
        )
    )
    status, headers, body = await conn.response()
    assert status == 413 and headers["connection"] == "close"
    assert "MAX_UPLOAD_BYTES" in json.loads(body)["detail"]
    # a client that sends its next request anyway is not answered on this connection (it
    # is part of the refused body) and sees it closed, not hanging
    await conn.send(HEALTH)
    await conn.closed(within=READ_TIMEOUT + 1)


async def test_after_a_413_the_next_request_of_an_http_client_is_answered(port):
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers={"X-API-Key": KEY}, timeout=2
    ) as client:
        refused = await client.post(
            "/documents", content=MB, headers={"Content-Type": "application/json"}
        )
        # Connection: close only when the body was not all read by then: on loopback the
        # client may have sent it whole already (the raw-socket test above pins the header)
        assert refused.status_code == 413
        assert (await client.get("/health")).status_code == 200


#: the read timeout where a whole body must arrive: the linger then waits for each piece
#: as in production (LINGER_IDLE_SECONDS), and a worker that a busy machine stalls for
#: more than READ_TIMEOUT does not cut the body off
WHOLE_BODY = pytest.mark.parametrize(
    "settings_overrides", [{**SETTINGS, "http_read_timeout_seconds": 5.0}]
)


@WHOLE_BODY
async def test_a_401_to_a_1_mb_body_arrives_whole_then_the_connection_closes(connect, port):
    conn = await connect(port)
    head = request(
        "POST",
        "/documents",
        "X-API-Key: wrong",
        "Content-Type: application/json",
        f"Content-Length: {len(MB)}",
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.send, head + MB)  # the whole body, while the answer comes
        status, headers, body = await conn.response()
    assert status == 401 and headers["connection"] == "close"
    assert json.loads(body)["detail"] == "wrong X-API-Key"
    await conn.closed()


@WHOLE_BODY
async def test_a_401_to_a_1_mb_body_reaches_an_http_client_which_then_goes_on(port):
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=2) as client:
        refused = await client.post(
            "/documents",
            content=MB,
            headers={"X-API-Key": "wrong", "Content-Type": "application/json"},
        )
        assert refused.status_code == 401
        assert refused.json()["detail"] == "wrong X-API-Key"
        listed = await client.get("/documents", headers={"X-API-Key": KEY})
        assert listed.status_code == 200


async def test_a_refused_body_is_read_for_a_limited_time_only(connect, port, monkeypatch):
    """A client that goes on sending a refused body, slowly, is cut off after the linger."""
    monkeypatch.setattr(connections, "LINGER_SECONDS", READ_TIMEOUT)
    conn = await connect(port)
    await conn.send(
        request(
            "POST",
            "/documents",
            "X-API-Key: wrong",
            "Content-Type: application/json",
            f"Content-Length: {len(MB)}",
        )
    )
    assert (await conn.response())[0] == 401
    # a byte each READ_TIMEOUT / 5: often enough not to hit the read timeout
    await conn.closed_while_sending(MB, every=READ_TIMEOUT / 5, within=READ_TIMEOUT + 1)


@pytest.mark.parametrize("settings_overrides", [{**SETTINGS, "http_read_timeout_seconds": 30}])
async def test_a_client_silent_after_a_refusal_is_not_waited_for_long(
    connect, port, monkeypatch, settings_overrides
):
    """With the default read timeout, a refused body that stops coming is given up after
    LINGER_IDLE_SECONDS, not after the read timeout or the whole linger."""
    monkeypatch.setattr(connections, "LINGER_IDLE_SECONDS", READ_TIMEOUT)
    conn = await connect(port)
    await conn.send(
        request(
            "POST",
            "/documents",
            f"X-API-Key: {KEY}",
            "Content-Type: application/json",
            "Content-Length: 10000000",
        )
    )
    assert (await conn.response())[0] == 413
    await conn.closed(within=READ_TIMEOUT + 1)


# ---------------------------------------------------------------- long answers are not cut


class TestLongAnswers:
    """The read timeout covers waiting for a body, not a client rightly silent while its
    answer is made or streamed."""

    @pytest.fixture
    async def fake(self, serve_fake: Any) -> FakeOpenAI:
        fake = await serve_fake(FakeOpenAI(api_key="sk-test", reply="It opens at 9 am [1]."))
        fake.chat_delay = READ_TIMEOUT + 0.25  # the first words come after that
        return fake

    @pytest.fixture
    def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return on_openai(fake, **SETTINGS)

    async def test_a_streamed_answer_slower_than_the_read_timeout_arrives_whole(self, port):
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"X-API-Key": KEY}, timeout=5
        ) as client:
            text = "# Hours\n\nThe shop opens at 9 am on weekdays."
            await client.post("/documents", json={"name": "faq.md", "text": text})
            async with client.stream(
                "POST", "/chat/stream", json={"question": "When does the shop open?"}
            ) as response:
                assert response.status_code == 200
                lines = [line async for line in response.aiter_lines()]
            assert "event: done" in lines
            assert any("9 am" in line for line in lines)


async def test_many_bodies_stalled_at_once_all_get_408_and_nothing_is_logged_as_a_fault(
    connect, port, caplog
):
    """Ten clients stop sending their bodies at the same moment: each is answered 408, and
    the server logs no error of its own for any of them."""
    conns = [await connect(port) for _ in range(10)]
    for conn in conns:
        await conn.send(
            request(
                "POST",
                "/documents",
                f"X-API-Key: {KEY}",
                "Content-Type: application/json",
                "Content-Length: 100",
                body=b'{"a": 1',
            )
        )
    statuses = []

    async def answered(conn: Conn) -> None:
        statuses.append((await conn.response(within=READ_TIMEOUT + 2))[0])
        await conn.stream.aclose()  # as a client does once it has its answer

    async with trio.open_nursery() as nursery:
        for conn in conns:
            nursery.start_soon(answered, conn)
    await trio.sleep(0.5)  # whatever the server logs after the clients leave
    assert statuses == [408] * 10
    faults = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not faults, [(r.getMessage(), r.exc_text or r.exc_info) for r in faults]
