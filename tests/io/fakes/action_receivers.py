"""Real receivers for outbound actions on 127.0.0.1.

- ``CertAuthority``: a test certificate authority (trustme). Its PEM file is what
  ``ACTIONS_CA_BUNDLE`` names, so the service trusts it explicitly; nothing else does.
- ``serve_https``: any fake (an ASGI app such as ``WorkflowReceiver``) served over TLS by
  Hypercorn with a certificate the authority issued for the given names.
- ``Redirector``: answers every request with a redirect to ``location``.
- ``SmtpServer``: aiosmtpd's Controller in a thread, STARTTLS required (or TLS from the
  first byte), a login checked, every message it accepted kept in ``messages``.
- ``FakeDiscordDM``: Discord's ``POST /users/@me/channels`` and
  ``POST /channels/{id}/messages``, checking the bot token.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import attrs
import trio
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from hypercorn.config import Config
from hypercorn.trio import serve

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError
from tests.io.processes import free_port


class CertAuthority:
    """A certificate authority for one test; ``bundle`` is its certificate as PEM."""

    def __init__(self, folder: Path) -> None:
        self.ca = trustme.CA()
        self.folder = folder
        self.bundle = folder / "test-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.bundle))

    def issue(self, *names: str) -> tuple[Path, Path]:
        """A server certificate and key for ``names`` (host names or IP addresses)."""
        cert = self.ca.issue_cert(*names)
        stem = re.sub(r"[^a-z0-9]+", "-", names[0].lower())
        certfile, keyfile = self.folder / f"{stem}.pem", self.folder / f"{stem}.key"
        cert.cert_chain_pems[0].write_to_path(str(certfile))
        for extra in cert.cert_chain_pems[1:]:
            extra.write_to_path(str(certfile), append=True)
        cert.private_key_pem.write_to_path(str(keyfile))
        return certfile, keyfile

    def server_context(self, *names: str) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert(*names).configure_cert(context)
        return context


@asynccontextmanager
async def serve_https(
    app: Any, nursery: trio.Nursery, authority: CertAuthority, *names: str
) -> AsyncIterator[int]:
    """Serve ``app`` over TLS on a free 127.0.0.1 port, with a certificate for ``names``;
    yields the port."""
    certfile, keyfile = authority.issue(*names)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.certfile, config.keyfile = str(certfile), str(keyfile)
    stop = trio.Event()
    binds = await nursery.start(
        lambda task_status: serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)
    )
    try:
        yield int(binds[0].rsplit(":", 1)[1])
    finally:
        if isinstance(app, FakeServer):
            app.close()
        stop.set()


class Redirector(FakeServer):
    """Answers every request with ``status`` and a Location header."""

    def __init__(self, location: str, status: int = 307) -> None:
        super().__init__(api_key="", reply="")
        self.location = location
        self.status = status

    async def _answer(self, request: Recorded, send: Send) -> None:
        await self._send_json(send, self.status, {}, {"location": self.location})

    def _failure(self, failure: Failure) -> WireError:
        raise NotImplementedError


@attrs.frozen
class Received:
    sender: str
    recipients: tuple[str, ...]
    message: Message
    tls: bool


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_DATA(self, smtp: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.server.messages.append(
            Received(
                envelope.mail_from,
                tuple(envelope.rcpt_tos),
                message_from_bytes(envelope.original_content),
                smtp.transport.get_extra_info("ssl_object") is not None,
            )
        )
        return "250 Message accepted for delivery"


class SmtpServer:
    """A real SMTP server on 127.0.0.1 that keeps what it receives. ``implicit_tls``
    speaks TLS from the first byte; otherwise STARTTLS is required before MAIL."""

    def __init__(
        self,
        authority: CertAuthority,
        user: str = "mailer",
        password: str = "mail-secret-123",  # noqa: S107 (a test server's)
        *,
        implicit_tls: bool = False,
        offer_starttls: bool = True,
    ) -> None:
        self.messages: list[Received] = []
        self.user, self.password = user, password
        self.logins: list[str] = []  # every login tried
        self.port = free_port()
        context = authority.server_context("127.0.0.1")
        kwargs: dict[str, Any] = {
            "authenticator": self._authenticate,
            "auth_required": True,
            "auth_require_tls": True,
        }
        if implicit_tls:  # aiosmtpd counts only STARTTLS as TLS for AUTH; this is TLS anyway
            kwargs.update(ssl_context=context, auth_require_tls=False, auth_required=False)
        elif offer_starttls:
            kwargs.update(tls_context=context, require_starttls=True)
        else:  # a server that would take mail in clear
            kwargs.update(auth_require_tls=False, auth_required=False)
        self.controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port, **kwargs)

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if isinstance(auth_data, LoginPassword):
            login, password = auth_data.login.decode(), auth_data.password.decode()
            self.logins.append(login)
            if login == self.user and password == self.password:
                return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    def __enter__(self) -> SmtpServer:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()


class FakeDiscordDM(FakeServer):
    """Opening a DM channel and posting in it, as Discord's REST API does."""

    def __init__(self, bot_token: str) -> None:
        super().__init__(api_key=bot_token, reply="")
        self.sent: list[dict[str, Any]] = []
        self.channels: dict[str, str] = {}

    async def _answer(self, request: Recorded, send: Send) -> None:
        if request.headers.get("authorization") != f"Bot {self.api_key}":
            raise WireError(401, "401: Unauthorized", {"message": "401: Unauthorized"}, None)
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "POST" and request.path == "/users/@me/channels":
            channel_id = str(900000000000000000 + len(self.channels))
            self.channels[channel_id] = str(body.get("recipient_id"))
            await self._send_json(send, 200, {"id": channel_id, "type": 1})
            return
        match = re.fullmatch(r"/channels/([0-9]+)/messages", request.path)
        if request.method == "POST" and match and match.group(1) in self.channels:
            self.sent.append({"recipient": self.channels[match.group(1)], **body})
            await self._send_json(send, 200, {"id": "1", "content": body.get("content")})
            return
        raise WireError(404, "Unknown Channel", {"message": "Unknown Channel", "code": 10003}, None)

    def _failure(self, failure: Failure) -> WireError:
        return WireError(failure.status, "scripted", {"message": "scripted"}, None)
