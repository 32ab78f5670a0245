"""Where a call the owner configured (a webhook or chat-ops action, an automation workflow)
may connect: the address rules, pure.

A call is judged by what it will connect to, not by how its URL spells the host. The host
is read the way resolvers and HTTP clients read it (``host_addresses``): IPv6 in
brackets, IPv4 in every form ``inet_aton`` accepts (``127.1``, ``2130706433``,
``0x7f000001``, ``0177.0.0.1``), internationalised digits (IDNA maps ``１２７.０.０.１`` to
``127.0.0.1``), and the names that are loopback by definition (``localhost`` and every
``*.localhost``, RFC 6761). Any other name is resolved by the runner, once; every address
it resolved to is judged (one refused address refuses the call: a name that resolves to a
public and a private address is a rebinding trick), and the runner connects only to an
address that passed, never resolving the name again.

What is refused, by kind of address:

- always: cloud metadata addresses and names, link-local (169.254/16, fe80::/10),
  unspecified (0.0.0.0/8, ::), multicast, reserved and every other range that is not
  routable on the internet; and the service's own address and port (a call into itself);
- unless the call's private-targets setting is on (``Reach.allow_private``): loopback
  (127/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7) and shared carrier-grade
  NAT addresses (100.64/10, used by Tailscale and similar);
- never: a public address.

An IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) is judged as the IPv4 address it
carries. A NAT64 (``64:ff9b::/96``) or 6to4 (``2002::/16``) address is judged by the IPv4
address it carries too, and refused always when that one is not public: a translator is
no way to reach this host or LAN.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

import attrs

IP = ipaddress.IPv4Address | ipaddress.IPv6Address

# Instance metadata services: credentials live here, so they are refused always.
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean …
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS DNS resolver
        "169.254.0.23",  # Tencent Cloud
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "fd00:ec2::254",  # AWS, over IPv6
    )
)
# Names of metadata services, refused without a lookup (they resolve only inside a cloud).
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)
# Names that are this host by definition (RFC 6761 and the usual /etc/hosts entries).
LOOPBACK_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localhost6",
        "localhost6.localdomain6",
        "ip6-localhost",
        "ip6-loopback",
    }
)
LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")

_net = ipaddress.ip_network
LINK_LOCAL = (_net("169.254.0.0/16"), _net("fe80::/10"))
THIS_NETWORK = _net("0.0.0.0/8")
# allowed only when the call's private-targets setting is on
PRIVATE = (
    (_net("127.0.0.0/8"), "a loopback address"),
    (_net("::1/128"), "a loopback address"),
    (_net("10.0.0.0/8"), "a private address"),
    (_net("172.16.0.0/12"), "a private address"),
    (_net("192.168.0.0/16"), "a private address"),
    (_net("fc00::/7"), "a private address"),
    (_net("100.64.0.0/10"), "a shared (carrier-grade NAT) address"),
)
NAT64 = _net("64:ff9b::/96")
DEFAULT_PORTS = {"http": 80, "https": 443}

_IPV4_PART = re.compile(r"^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$")


@attrs.frozen
class Reach:
    """Where one kind of call may connect, and how its refusals read.

    ``calls`` names the calls in messages ("workflow calls"); ``setting`` is the setting
    that lets them reach loopback and private addresses (``allow_private``), and
    ``private_hint`` ends a refusal of such an address; ``schemes`` are the URL schemes
    the calls use; ``service_port`` and ``service_networks`` are where the service itself
    listens (``own_networks``), never called."""

    calls: str
    setting: str
    private_hint: str
    allow_private: bool = False
    schemes: tuple[str, ...] = ("https",)
    service_port: int | None = None
    service_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()


def own_networks(
    bind: str, interfaces: Iterable[str] = ()
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """The addresses the service answers on when bound to ``bind`` (APP_BIND): that one
    address; both loopback addresses for ``localhost``; for 0.0.0.0 or :: (every
    interface) all of loopback plus ``interfaces``, the host's own addresses."""
    if bind == "localhost":
        return (_net("127.0.0.1/32"), _net("::1/128"))
    try:
        address = ipaddress.ip_address(bind)
    except ValueError:
        return ()
    if not address.is_unspecified:
        return (ipaddress.ip_network(address),)
    networks = [_net("127.0.0.0/8"), _net("::1/128")]
    for text in interfaces:
        try:
            networks.append(ipaddress.ip_network(text.split("%", 1)[0]))
        except ValueError:
            continue
    return tuple(networks)


# ---------------------------------------------------------------- reading a host


def normal_host(host: str) -> str:
    """``host`` as resolvers see it: IDNA-encoded (which also maps full-width digits and
    ideographic full stops), lowercase, without a trailing dot. ValueError when it cannot
    be a host name."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:  # IPv6; a zone (%eth0) is kept for ip_address to read
        return host.lower()
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"{host!r} is not a valid host name") from None
    ascii_host = ascii_host.lower()
    ascii_host = ascii_host[:-1] if ascii_host.endswith(".") else ascii_host
    if not ascii_host:
        raise ValueError("the URL has no host")
    return ascii_host


def inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``text`` spells in any form ``inet_aton`` (and so ``getaddrinfo``)
    accepts: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last part
    fills the bytes left (``127.1`` is 127.0.0.1, ``2130706433`` and ``0x7f000001`` are
    too). None when it is not such a spelling."""
    parts = text.lower().split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.match(p) for p in parts):
        return None
    values = [_ipv4_part(p) for p in parts]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for position, value in enumerate(head):
        number |= value << (8 * (3 - position))
    return ipaddress.IPv4Address(number)


def _ipv4_part(part: str) -> int:
    if part.startswith("0x"):
        return int(part[2:] or "0", 16)
    if part.startswith("0") and len(part) > 1:
        return int(part[1:], 8)
    return int(part)


def host_addresses(host: str) -> list[str] | None:
    """The addresses ``host`` (a URL's host, already normalised) stands for without any
    lookup: an IP address in any spelling, or both loopback addresses for a localhost
    name; None for a name that has to be resolved."""
    if ":" in host:
        address = host.split("%", 1)[0]
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return None
        return [address]
    spelled = inet_aton(host)
    if spelled is not None:
        return [str(spelled)]
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return list(LOOPBACK_ADDRESSES)
    return None


# ---------------------------------------------------------------- judging


def _carried(ip: IP) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), if any."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def kind_of(ip: IP) -> tuple[str, bool] | None:
    """What a non-public address is, and whether the private-targets setting may allow
    it; None for a public address."""
    if ip in METADATA:
        return "a cloud metadata address", False
    if any(ip in network for network in LINK_LOCAL):
        return "a link-local address", False
    if ip.is_unspecified or ip in THIS_NETWORK:
        return "an unspecified address", False
    if ip.is_multicast:
        return "a multicast address", False
    for network, what in PRIVATE:
        if ip in network:
            return what, True
    if ip.is_reserved:
        return "a reserved address", False
    if not ip.is_global or ip.is_private:
        return "not a public address", False
    return None


def address_refusal(address: str, reach: Reach, port: int | None = None) -> str | None:
    """Why a call must not connect to ``address`` (an IP address as text) on ``port``;
    None when it may."""
    try:
        ip: IP = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    carried = _carried(ip)
    judged = ip if carried is None else carried
    shown = str(address) if carried is None else f"{address} ({carried})"
    kind = kind_of(judged)
    if (
        kind is not None
        and isinstance(ip, ipaddress.IPv6Address)
        and carried is not None
        and ip.ipv4_mapped is None
    ):
        kind = (f"{kind[0]} behind an address translator", False)  # NAT64, 6to4: never
    if kind is not None and not kind[1]:
        return f"{shown} is {kind[0]}; {reach.calls} never go there"
    if port == reach.service_port and any(judged in n for n in reach.service_networks):
        return (
            f"{shown} port {port} is this service itself (APP_BIND and APP_PORT); "
            f"{reach.calls} never call back into it"
        )
    if kind is not None and not reach.allow_private:
        return f"{shown} is {kind[0]}; {reach.private_hint}"
    return None


def addresses_refusal(
    host: str, addresses: list[str], reach: Reach, port: int | None = None
) -> str | None:
    """Why ``host``, resolved to ``addresses``, must not be called; None when every address
    may be."""
    if not addresses:
        return f"{host} did not resolve to any address"
    for address in addresses:
        refusal = address_refusal(address, reach, port)
        if refusal is not None:
            return refusal if address == host else f"{host}: {refusal}"
    return None


def private_kind(address: str) -> str | None:
    """'a loopback address' and the like, for an address a call reaches only because the
    private-targets setting is on; None for a public one."""
    try:
        ip: IP = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    carried = _carried(ip)
    kind = kind_of(ip if carried is None else carried)
    return kind[0] if kind is not None else None


# ---------------------------------------------------------------- a URL


def url_port(url: str) -> int:
    """The port a URL names, or its scheme's default; ValueError for a bad port."""
    parts = urlsplit(url)
    return parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 443)


def url_refusal(url: str, reach: Reach) -> str | None:
    """Why ``url`` is refused before any lookup; None when it may be called as far as the
    URL alone shows (a name is still to be resolved and its addresses judged). A scheme of
    ``reach``, a host, no user:password; an address in any spelling is judged here, as are
    localhost and cloud metadata names."""
    try:
        parts = urlsplit(url)
        port = url_port(url)
    except ValueError:
        return "the URL is not valid"
    if parts.scheme.lower() not in reach.schemes:
        return f"only {' and '.join(s + '://' for s in reach.schemes)} targets are called"
    if not parts.hostname:
        return "the URL has no host"
    if parts.username is not None or parts.password is not None:
        return "the URL must not contain user:password@"
    try:
        host = normal_host(parts.hostname)
    except ValueError as bad:
        return str(bad)
    if host in METADATA_NAMES:
        return f"{host} is a cloud metadata name; {reach.calls} never go there"
    addresses = host_addresses(host)
    if addresses is None:
        return None
    return addresses_refusal(host, addresses, reach, port)
