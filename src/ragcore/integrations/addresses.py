"""Where a data source may be: the address rules of workflows and actions
(``ragcore.targets.addresses``) applied to every connector's host, Unix sockets only when
allowed, and never the service's own database. Pure: the runner in ragio resolves names,
judges every address with these rules, and connects only to an address that passed.

- An address is judged as a workflow's target is (``targets``): cloud metadata,
  link-local, unspecified and the service's own APP_BIND/APP_PORT always refused;
  loopback, private and carrier-grade NAT addresses only with
  INTEGRATIONS_ALLOW_PRIVATE_TARGETS (the owner's database on their LAN).
- A host that is a path (``/run/postgresql``, or ``@name``, Linux's abstract socket
  namespace) is a Unix socket: refused unless INTEGRATIONS_ALLOW_UNIX_SOCKETS.
- The service's own database (``OwnDatabase``: the socket directories and the addresses
  and ports of the URL the service connects with) and anything under DATA_DIR are
  refused always, whatever the settings say: a data source's template runs with its
  connection's rights, and the service's database holds every secret it keeps.

``save_refusal`` judges what a body holds literally (an address, a localhost name, a
socket path) when a data source is saved; a name is resolved and judged at every use.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import attrs

from ragcore.settings import Settings
from ragcore.targets.addresses import (
    METADATA_NAMES,
    Reach,
    addresses_refusal,
    host_addresses,
    normal_host,
    own_networks,
)

PRIVATE_SETTING = "INTEGRATIONS_ALLOW_PRIVATE_TARGETS"
SOCKETS_SETTING = "INTEGRATIONS_ALLOW_UNIX_SOCKETS"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
DEFAULT_PORTS = {"mysql": 3306, "postgresql": 5432, "mongodb": 27017}
#: the fields of each HTTP kind that hold a URL, with the default the connector uses
URL_FIELDS = {
    "rest_api": ("base_url",),
    "hubspot": ("api_base",),
    "stripe": ("api_base",),
    "google_sheets": ("api_base",),
    "salesforce": ("login_url",),
    "shopify": ("shop_domain",),
}


def targets(
    allow_private: bool = False,
    service_port: int | None = None,
    service_networks: tuple[Network, ...] = (),
) -> Reach:
    """The address rules of data sources (``ragcore.targets.addresses.Reach``)."""
    return Reach(
        calls="data sources",
        setting=PRIVATE_SETTING,
        private_hint=f"set {PRIVATE_SETTING}=true to reach a data source on this host or LAN",
        allow_private=allow_private,
        schemes=("https", "http"),  # http only to 127.0.0.1 with the loopback setting
        service_port=service_port,
        service_networks=service_networks,
    )


def targets_of(settings: Settings, interfaces: Iterable[str] = ()) -> Reach:
    """The rules under ``settings``; ``interfaces``: the host's addresses, when APP_BIND is
    every interface."""
    return targets(
        bool(settings.integrations_allow_private_targets),
        settings.app_port,
        own_networks(settings.app_bind, interfaces),
    )


@attrs.frozen
class OwnDatabase:
    """The service's own database, which no data source may be: ``socket_dirs`` (the
    directories of its Unix sockets), ``networks`` and ``ports`` (where it is reached over
    TCP: a loopback address stands for every address of this host), and ``data_dir``
    (DATA_DIR: its files, the embedded server's included). Paths as the runner resolved
    them (symbolic links followed)."""

    socket_dirs: tuple[str, ...] = ()
    networks: tuple[Network, ...] = ()
    ports: tuple[int, ...] = ()
    data_dir: str = ""


def database_networks(addresses: Iterable[str], interfaces: Iterable[str]) -> tuple[Network, ...]:
    """Where a server reached at ``addresses`` answers: each address; for a loopback one or
    one of this host's ``interfaces``, all of loopback and every interface (a server
    listening on every interface answers on each)."""
    interfaces = tuple(interfaces)
    own = {text.split("%", 1)[0] for text in interfaces}
    found: list[Network] = []
    for text in addresses:
        try:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            continue
        if ip.is_loopback or str(ip) in own:
            found.extend(own_networks("0.0.0.0", interfaces))  # noqa: S104 (every interface)
        else:
            found.append(ipaddress.ip_network(ip))
    return tuple(dict.fromkeys(found))


def is_socket(host: str) -> bool:
    """Whether ``host`` names a Unix socket (a path, or ``@`` and a name in Linux's abstract
    namespace) rather than a network host."""
    return host.startswith(("/", "@"))


def _within(path: str, folder: str) -> bool:
    path, folder = posixpath.normpath(path), posixpath.normpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def socket_refusal(path: str, field: str, own: OwnDatabase, allow_sockets: bool) -> str | None:
    """Why a data source must not connect to the Unix socket ``path`` (given in
    ``field``); None when it may."""
    for folder in own.socket_dirs:
        if _within(path, folder):
            return (
                f"{field}: {path} is where the service's own database listens; a data "
                "source never reads the service's own database"
            )
    if own.data_dir and not path.startswith("@") and _within(path, own.data_dir):
        return (
            f"{field}: {path} is under DATA_DIR, the service's own data; a data source "
            "never reads it"
        )
    if not allow_sockets:
        return (
            f"{field}: {path} is a Unix socket; set {SOCKETS_SETTING}=true to reach a "
            "database on this host through its socket"
        )
    return None


def own_database_refusal(address: str, port: int, own: OwnDatabase) -> str | None:
    """Why ``address`` (an IP address as text) on ``port`` is the service's own database;
    None when it is not."""
    if port not in own.ports:
        return None
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in network for network in own.networks):
        return (
            f"{address} port {port} is the service's own database; a data source never "
            "reads the service's own database"
        )
    return None


def host_refusal(
    field: str,
    host: str,
    port: int,
    addresses: list[str],
    rules: Reach,
    own: OwnDatabase,
) -> str | None:
    """Why ``host`` (given in ``field``), resolved to ``addresses``, must not be connected
    to on ``port``; None when every address may be. The reason names the field (when
    ``field`` is blank, the host alone)."""
    refusal = addresses_refusal(host, addresses, rules, port)
    if refusal is None:
        for address in addresses:
            refusal = own_database_refusal(address, port, own)
            if refusal is not None:
                refusal = refusal if address == host else f"{host}: {refusal}"
                break
    if refusal is None:
        return None
    return f"{field}: {refusal}" if field else refusal


# ---------------------------------------------------------------- a body being saved


@attrs.frozen
class Endpoint:
    """A host a data source connects to, as its fields spell it: ``field`` names where."""

    field: str
    host: str
    port: int


def endpoints(kind: str, credentials: Mapping[str, str]) -> list[Endpoint]:
    """The hosts ``credentials`` of ``kind`` name literally, as far as the text shows
    (the connector reads them again, with its driver, at every use)."""
    found: list[Endpoint] = []
    if kind in ("mysql", "postgresql"):
        default = DEFAULT_PORTS[kind]
        if credentials.get("url"):
            found.extend(_url_endpoints(credentials["url"], default, kind == "postgresql"))
        elif credentials.get("host"):
            found.append(
                Endpoint("host", credentials["host"], _port(credentials.get("port"), default))
            )
    elif kind == "mongodb" and credentials.get("url"):
        found.extend(_url_endpoints(credentials["url"], DEFAULT_PORTS[kind], False))
    for field in URL_FIELDS.get(kind, ()):
        value = (credentials.get(field) or "").strip()
        if not value:
            continue
        url = value if "://" in value else f"https://{value}"
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            continue  # the connector says what is wrong with it
        if parts.hostname:
            found.append(Endpoint(field, parts.hostname, port))
    if kind == "google_sheets":
        found.extend(_token_uri(credentials.get("service_account_json", "")))
    return found


def _url_endpoints(url: str, default: int, libpq: bool) -> list[Endpoint]:
    """The hosts of a database URL: ``host[:port]`` pairs, comma-separated, after the
    last ``@`` of its authority (a socket path percent-encoded), and for libpq the
    ``host=`` and ``hostaddr=`` options, which win over it."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    hosts: list[tuple[str, int]] = []
    authority = parts.netloc.rpartition("@")[2]
    for item in filter(None, authority.split(",")):
        host, port = _host_port(unquote(item), default)
        if host:
            hosts.append((host, port))
    if libpq:
        options = dict(parse_qsl(parts.query))
        ports = [p for p in options.get("port", "").split(",") if p.strip()]
        for key in ("host", "hostaddr"):
            named = [h for h in options.get(key, "").split(",") if h.strip()]
            if named:
                given = [_port(p, default) for p in ports] or [h[1] for h in hosts] or [default]
                hosts = [(h, given[min(n, len(given) - 1)]) for n, h in enumerate(named)]
    return [Endpoint("url", host, port) for host, port in hosts]


def _host_port(item: str, default: int) -> tuple[str, int]:
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        return host, _port(rest.removeprefix(":"), default)
    if item.startswith("/") or item.count(":") != 1:
        return item, default
    host, _, port = item.partition(":")
    return host, _port(port, default)


def _port(text: str | None, default: int) -> int:
    text = (text or "").strip()
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else default


def _token_uri(key_file: str) -> list[Endpoint]:
    try:
        account: Any = json.loads(key_file)
        parts = urlsplit(str(account.get("token_uri", "")))
        port = parts.port or 443
    except (ValueError, AttributeError):
        return []
    return [Endpoint("service_account_json", parts.hostname, port)] if parts.hostname else []


def save_refusal(
    kind: str,
    credentials: Mapping[str, str],
    rules: Reach,
    own: OwnDatabase,
    allow_sockets: bool,
) -> tuple[str, str] | None:
    """``(field, reason)`` when a host the credentials spell literally (an address in any
    spelling, a localhost or metadata name, a socket path) is one a data source must not
    reach; None otherwise (a name is resolved and judged at every use)."""
    for endpoint in endpoints(kind, credentials):
        field = endpoint.field
        if is_socket(endpoint.host):
            refusal = socket_refusal(endpoint.host, field, own, allow_sockets)
            if refusal is not None:
                return field, refusal
            continue
        try:
            host = normal_host(endpoint.host)
        except ValueError as bad:
            return field, f"{field}: {bad}"
        if host in METADATA_NAMES:
            return field, f"{field}: {host} is a cloud metadata name; data sources never go there"
        addresses = host_addresses(host)
        if addresses is None:
            continue
        refusal = host_refusal(field, host, endpoint.port, addresses, rules, own)
        if refusal is not None:
            return field, refusal
    return None
