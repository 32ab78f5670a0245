"""How connectors may reach their sources under the service's settings: the address rules
(INTEGRATIONS_ALLOW_PRIVATE_TARGETS, the service's own address and port), Unix sockets
(INTEGRATIONS_ALLOW_UNIX_SOCKETS), the cap on one answer (INTEGRATIONS_MAX_RESPONSE_MB),
and the service's own database, which no data source may be: the socket directories,
addresses and ports of the URL the service connects with (the embedded server's or
DATABASE_URL), and DATA_DIR."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import attrs
import psutil
import trio
from psycopg.conninfo import conninfo_to_dict

from ragcore.integrations.addresses import OwnDatabase, database_networks, is_socket, targets_of
from ragcore.targets.addresses import host_addresses, normal_host
from ragio.integrations.connectors.addresses import source_client
from ragio.integrations.connectors.base import Reach
from ragio.service import Service
from ragio.targets.post import interfaces, resolve

#: how long the own database's host name may take to resolve
RESOLVE_SECONDS = 2.0
#: where libpq looks for a socket when a URL names no host (Debian's, and libpq's default)
DEFAULT_SOCKET_DIRS = ("/var/run/postgresql", "/run/postgresql", "/tmp")  # noqa: S108


def host_interfaces() -> tuple[str, ...]:
    """Every address of this host's interfaces."""
    return tuple(
        address.address
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family in (socket.AF_INET, socket.AF_INET6)
    )


async def own_database(url: str, data_dir: str) -> OwnDatabase:
    """The service's own database as ``url`` (a libpq URL or conninfo) reaches it, and
    ``data_dir``: its socket directories, the networks and ports it answers on."""
    try:
        params = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 (the service connected with it: not expected)
        params = {}
    hosts = [h for h in str(params.get("host") or "").split(",") if h]
    hosts += [h for h in str(params.get("hostaddr") or "").split(",") if h]
    ports = [int(p) for p in str(params.get("port") or "").split(",") if p.strip().isdigit()]
    sockets = [os.path.realpath(h) for h in hosts if is_socket(h) and not h.startswith("@")]
    sockets += [h for h in hosts if h.startswith("@")]
    if not hosts:
        sockets += [os.path.realpath(d) for d in DEFAULT_SOCKET_DIRS]
    addresses: list[str] = []
    for host in (h for h in hosts if not is_socket(h)):
        with suppress(ValueError):
            host = normal_host(host)
        known = host_addresses(host)
        if known is None:
            known = []
            with trio.move_on_after(RESOLVE_SECONDS), suppress(OSError):
                known = await resolve(host, ports[0] if ports else 5432)
        addresses.extend(known)
    return OwnDatabase(
        socket_dirs=tuple(dict.fromkeys(sockets)),
        networks=database_networks(addresses, host_interfaces()) if addresses else (),
        ports=tuple(dict.fromkeys(ports or [5432])),
        data_dir=os.path.realpath(data_dir) if data_dir else "",
    )


async def connector_reach(service: Service, timeout: float, *, live: bool = False) -> Reach:
    """A Reach under the service's settings, with no HTTP client (the database kinds'),
    ``timeout`` for each request; ``live``: a live query's (a driver's thread is left
    behind when its time is up; see ``Reach.live``)."""
    settings = service.settings
    return Reach(
        timeout,
        settings.integrations_allow_http_loopback,
        clock=service.clock,
        abandon_on_cancel=live,
        targets=targets_of(settings, interfaces(settings)),
        own_database=await own_database(service.database.url, str(settings.data_dir)),
        allow_unix_sockets=settings.integrations_allow_unix_sockets,
        max_response_bytes=max(1, round(settings.integrations_max_response_mb * 2**20)),
        live=live,
    )


@asynccontextmanager
async def http_reach(
    service: Service, timeout: float, *, live: bool = False
) -> AsyncIterator[Reach]:
    """``connector_reach`` with an HTTP client of its own (``source_client``), closed on
    the way out."""
    within = await connector_reach(service, timeout, live=live)
    async with source_client(within) as client:
        yield attrs.evolve(within, client=client)
