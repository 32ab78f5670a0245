"""How an HTTP/1.1 exchange ends: ASGI middleware around the Quart app, so that every
connection ends promptly and every answer reaches the client.

It works around three faults of Hypercorn 0.18's Trio worker serving Quart-Trio 0.12,
all in this one place (docs/operations.md, "Connections", says what a client sees):

1. **Hypercorn's end-of-exchange work is cancelled.** Hypercorn finishes an exchange
   inside the app's last ``send()``: it closes the socket (after ``Connection: close``,
   an HTTP/1.0 request, or a body it did not read) or restarts the keep-alive timer.
   That same call hands the app ``http.disconnect``, on which Quart-Trio cancels the
   request's tasks, the one in ``send()`` included; the close is then cancelled at the
   checkpoint in ``send_eof()`` and the timer restart at its lock, so the connection
   stays open until the client leaves (and, kept alive, is never timed out). Hypercorn
   shields its socket writes but not this. Here every ``send()`` runs shielded.
2. **No read timeout for a body.** Hypercorn's ``read_timeout`` would limit every read
   of the connection, also while the client rightly sends nothing (a long answer, a
   server-sent-events stream). Here only waiting for the next bytes of a request body
   is limited, by ``HTTP_READ_TIMEOUT_SECONDS``: past it the answer is 408 and the
   connection closes. (A request head gets Hypercorn's keep-alive timeout.)
3. **An answer sent before the body was read.** The 401 of the API key rule and the
   413 of a declared length over the limit are answered without reading the body. The
   connection cannot carry another request then (the unread body would be taken for
   it); closed at once, with the client still sending, the server's system answers the
   rest with a reset, which breaks the client's sending and can destroy the answer
   before the client reads it. Here such an answer says ``Connection: close``, and the
   rest of the body is read and thrown away (for at most ``LINGER_SECONDS``, and only
   while pieces come at least every ``LINGER_IDLE_SECONDS``) before the connection is
   closed, as RFC 9112 section 9.6 advises.
4. **A client that leaves as its answer ends breaks the sending.** When the client
   closes its side, Hypercorn's reading task closes the socket (``send_eof()``) without
   taking the lock its sends take; a send of the app's under way then (the empty end of a
   response of known length, typically: the client had it all and left) raises
   ``trio.BusyResourceError``, which Hypercorn logs as "Error in ASGI Framework". Every
   answer closing its connection (408, 413) meets it when several clients leave at once.
   Here such a send counts as the client gone: nothing more is sent, nothing is logged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NoReturn

import trio

from ragio.http.problems import PROBLEM_JSON, Problem

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]

#: the longest a refused body is read (and thrown away) after its answer, before closing
LINGER_SECONDS = 10.0
#: ... and the longest wait for its next piece then (or the read timeout, if shorter)
LINGER_IDLE_SECONDS = 2.0


class ConnectionGuard:
    """Wraps an ASGI app; HTTP requests go through an ``_Exchange`` each, the rest as is."""

    def __init__(self, app: ASGIApp, read_timeout: float) -> None:
        self.app = app
        self.read_timeout = read_timeout

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await _Exchange(scope, receive, send, self.read_timeout).run(self.app)


def _has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the request announces a body (RFC 9112 section 6.3: without Content-Length
    or Transfer-Encoding it has none)."""
    for name, value in headers:
        name = name.lower()
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class _Exchange:
    """One request and its answer. The app's reads of the request go through
    ``_receive``, which limits the wait for the body's next bytes (the read timeout) and,
    once the app has answered, throws the rest of the body away."""

    def __init__(self, scope: Message, receive: Receive, send: Send, read_timeout: float):
        self.scope = scope
        self.server_receive = receive
        self.server_send = send
        self.read_timeout = read_timeout
        self.body_done = not _has_body(scope.get("headers", []))
        # Connection: close is HTTP/1 only (HTTP/2 ends a stream, not the connection)
        self.http1 = scope.get("http_version") in ("1.0", "1.1")
        self.answered = False  # the app has started its response
        self.responded = False  # ... and sent all of it
        self.linger = False  # the response started before the body was read
        self.timed_out = False
        self.left = False  # the client closed the connection
        self.cut = False  # Hypercorn is closing the socket: nothing more can be sent (4.)
        self.settled = trio.Event()  # the body is done, or the client left or went quiet
        if self.body_done:
            self.settled.set()
        self.app_scope = trio.CancelScope()
        self.read_scope: trio.CancelScope | None = None  # the current wait for the body

    async def run(self, app: ASGIApp) -> None:
        with self.app_scope:
            await app(self.scope, self._receive, self._send)
        if self.timed_out and not self.answered:
            await self._answer_timeout()

    async def _receive(self) -> Message:
        """The server's next message for the app (Quart reads them all, in a task of its
        own, until the client leaves or the answer is sent); a body's read in time."""
        while True:
            if self.body_done:
                message = await self.server_receive()  # the client leaving, at most
            else:
                message = await self._read_body()
            kind = message["type"]
            if kind == "http.request" and not message.get("more_body", False):
                self.body_done = True
            self.left = kind == "http.disconnect"
            if self.body_done or self.left:
                self.settled.set()
            if kind == "http.request" and self.responded:
                if not self.body_done:
                    continue  # the app has answered already: the rest is thrown away
                message = {"type": "http.request", "body": b"", "more_body": False}
            return message

    async def _read_body(self) -> Message:
        wait = self.read_timeout
        if self.responded:
            wait = min(wait, LINGER_IDLE_SECONDS)
        with trio.move_on_after(wait) as self.read_scope:
            return await self.server_receive()
        await self._timed_out()

    async def _timed_out(self) -> NoReturn:
        """No bytes of the body came within the read timeout: an app that has not answered
        yet is stopped (``run`` answers 408); nothing more is read."""
        self.timed_out = True
        self.settled.set()
        if not self.answered:
            self.app_scope.cancel()
        await trio.sleep_forever()

    async def _send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.answered = True
            if not self.body_done and self.http1:
                message = {**message, "headers": _closing(message.get("headers", []))}
                # a response of known length can be held open while the body is read:
                # its client can tell it is complete
                self.linger = any(n.lower() == b"content-length" for n, _ in message["headers"])
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.responded = True
            if self.linger and not self.settled.is_set():
                if self.read_scope is not None:  # the wait under way is cut to the linger's
                    self.read_scope.deadline = min(
                        self.read_scope.deadline, trio.current_time() + LINGER_IDLE_SECONDS
                    )
                await self._shielded({**message, "more_body": True})
                try:
                    with trio.move_on_after(LINGER_SECONDS):
                        await self.settled.wait()
                finally:
                    if not self.left:
                        await self._shielded({"type": "http.response.body", "body": b""})
                return
        await self._shielded(message)

    async def _shielded(self, message: Message) -> None:
        # Hypercorn closes the connection or restarts its keep-alive timer inside this
        # call; cancelled halfway, the connection would stay open (the module's 1.)
        if self.cut:
            return
        with trio.CancelScope(shield=True):
            try:
                await self.server_send(message)
            except trio.BusyResourceError:  # the socket is being closed (the module's 4.)
                self.cut = True

    async def _answer_timeout(self) -> None:
        detail = (
            f"the request body stopped arriving: no bytes for {self.read_timeout:g} s "
            "(HTTP_READ_TIMEOUT_SECONDS)"
        )
        body = json.dumps(Problem(408, detail).body()).encode()
        headers = [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        if self.http1:
            headers = _closing(headers)
        start = {"type": "http.response.start", "status": 408, "headers": headers}
        await self._shielded(start)
        await self._shielded({"type": "http.response.body", "body": body})


def _closing(headers: Any) -> list[tuple[bytes, bytes]]:
    kept = [(name, value) for name, value in headers if name.lower() != b"connection"]
    return [*kept, (b"connection", b"close")]
