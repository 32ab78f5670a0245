"""Where a connector may connect, enforced: every host a data source names is resolved
once, each address it resolves to is judged by ``ragcore.integrations.addresses`` (the
address rules of workflows and actions, and never the service's own database), and the
connection goes to an address that passed, never to a second lookup of the name.

- The database kinds judge their host in their worker thread (``judged``) and hand the
  driver the address (psycopg's ``hostaddr``, PyMySQL's ``host``), the name kept for
  TLS; a Unix socket's path is judged by the socket rules (``checked_socket``).
- The HTTP kinds' client (``source_client``) connects through ``Guarded``, a network
  backend that judges the host of each new connection the same way and connects to an
  address that passed, while TLS (SNI, certificate check) and the Host header still use
  the URL's name. Redirects are never followed.

A refusal is ``SourceFailed`` naming the field (or the host) and the setting to change.
A connection to a loopback or private address the setting allows is logged at info level.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
import trio

from ragcore.integrations.addresses import host_refusal, is_socket, socket_refusal
from ragcore.targets.addresses import METADATA_NAMES, host_addresses, normal_host, private_kind
from ragio.integrations.connectors.base import Reach, SourceFailed
from ragio.targets.post import resolve

log = logging.getLogger(__name__)


def resolve_now(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (blocking: for a driver's worker thread)."""
    found: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = str(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


def _said(field: str, reason: str) -> str:
    """``reason``, after the field it is about (none: the host in it says)."""
    return f"{field}: {reason}" if field else reason


def _name(field: str, host: str) -> str:
    try:
        name = normal_host(host)
    except ValueError as bad:
        raise SourceFailed(_said(field, str(bad))) from None
    if name in METADATA_NAMES:
        metadata = f"{name} is a cloud metadata name; data sources never go there"
        raise SourceFailed(_said(field, metadata))
    return name


def _judge(field: str, name: str, port: int, addresses: list[str], reach: Reach) -> list[str]:
    refusal = host_refusal(field, name, port, addresses, reach.targets, reach.own_database)
    if refusal is not None:
        raise SourceFailed(refusal)
    for address in addresses:
        kind = private_kind(address)
        if kind is not None:
            log.info(
                "data source host %s: connecting to %s, %s, as %s=true allows",
                name,
                address,
                kind,
                reach.targets.setting,
            )
    return addresses


def judged(field: str, host: str, port: int, reach: Reach) -> list[str]:
    """The addresses ``host`` (given in ``field``) stands for on ``port``, every one of
    them judged; SourceFailed naming the field otherwise. Blocking: resolves in this
    thread."""
    name = _name(field, host)
    addresses = host_addresses(name)
    if addresses is None:
        try:
            addresses = resolve_now(name, port)
        except OSError:
            raise SourceFailed(_said(field, f"{host} could not be resolved")) from None
    return _judge(field, name, port, addresses, reach)


async def judged_async(field: str, host: str, port: int, reach: Reach) -> list[str]:
    """``judged``, resolving under Trio."""
    name = _name(field, host)
    addresses = host_addresses(name)
    if addresses is None:
        try:
            addresses = await resolve(name, port)
        except OSError:
            raise SourceFailed(_said(field, f"{host} could not be resolved")) from None
    return _judge(field, name, port, addresses, reach)


def checked_socket(field: str, path: str, reach: Reach) -> str:
    """``path`` when a data source may connect to that Unix socket; SourceFailed naming
    ``field`` and why not otherwise. The path is judged as it resolves (its symbolic
    links followed)."""
    shown = path
    if not path.startswith("@"):
        path = os.path.realpath(path)
    refusal = socket_refusal(path, field, reach.own_database, reach.allow_unix_sockets)
    if refusal is not None:
        raise SourceFailed(refusal.replace(path, shown, 1) if path != shown else refusal)
    return shown


def pinned(field: str, host: str, port: int, reach: Reach) -> tuple[str, list[str]]:
    """Where a database connector connects for ``host``: ``("socket", [path])`` for a
    Unix socket that may be used, else ``("tcp", addresses)`` judged; SourceFailed
    otherwise."""
    if is_socket(host):
        return "socket", [checked_socket(field, host, reach)]
    return "tcp", judged(field, host, port, reach)


class Guarded(httpcore.AsyncNetworkBackend):
    """A network backend that judges the host of each connection it opens (see the
    module) and connects to an address that passed."""

    def __init__(self, reach: Reach) -> None:
        self._reach = reach
        self._inner = httpcore.TrioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await judged_async("", host, port, self._reach)  # the reason names it
        failed: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failed = error  # nothing was sent: the next judged address may answer
        assert failed is not None
        raise failed

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise SourceFailed("data sources are not called through a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


class _Transport(httpx.AsyncHTTPTransport):
    """httpx's transport on a connection pool whose connections go through ``Guarded``."""

    def __init__(self, reach: Reach) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=20,
            max_keepalive_connections=10,
            keepalive_expiry=5.0,
            network_backend=Guarded(reach),
        )


def source_client(reach: Reach) -> httpx.AsyncClient:
    """An HTTP client for data sources within ``reach``: each connection judged and pinned
    (``Guarded``), ``reach.timeout`` on every request, no redirect followed, no proxy
    from the environment."""
    return httpx.AsyncClient(
        transport=_Transport(reach),
        timeout=httpx.Timeout(reach.timeout),
        follow_redirects=False,
        trust_env=False,
    )
