"""How an HTTP/1.1 exchange ends: ASGI middleware around the Quart app, so that every
connection ends promptly.

It works around a fault of Hypercorn 0.18's Trio worker serving Quart-Trio 0.12, in this
one place (docs/operations.md, "Connections", says what a client sees):

**Hypercorn's end-of-exchange work is cancelled.** Hypercorn finishes an exchange inside
the app's last ``send()``: it closes the socket (after ``Connection: close``, an HTTP/1.0
request, or a body it did not read) or restarts the keep-alive timer. That same call hands
the app ``http.disconnect``, on which Quart-Trio cancels the request's tasks, the one in
``send()`` included; the close is then cancelled at the checkpoint in ``send_eof()`` and
the timer restart at its lock, so the connection stays open until the client leaves (and,
kept alive, is never timed out). Hypercorn shields its socket writes but not this. Here
every ``send()`` runs shielded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]


class ConnectionGuard:
    """Wraps an ASGI app: its HTTP responses are sent shielded from cancellation."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def shielded(message: Message) -> None:
            # Hypercorn closes the connection or restarts its keep-alive timer inside this
            # call; cancelled halfway, the connection would stay open
            with trio.CancelScope(shield=True):
                await send(message)

        await self.app(scope, receive, shielded)
