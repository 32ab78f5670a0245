"""Where webhook and chat-ops actions may connect: https URLs, public addresses only.

The runner resolves a target's host once, asks ``address_refusal`` about every address
the name resolved to (one non-public address refuses the call: a name that resolves to a
public and a private address is a rebinding trick), and then connects to an address it
checked, never resolving the name again. ``ACTIONS_ALLOW_PRIVATE_TARGETS=true`` lets
loopback and private addresses through for local testing; cloud metadata addresses stay
refused even then.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

# Instance metadata services: credentials live here, so they are refused always.
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean …
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS DNS resolver
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "fd00:ec2::254",  # AWS, over IPv6
    )
)


def url_refusal(url: str) -> str | None:
    """Why ``url`` is not a target an action may call; None when it is. https only, with
    a host and without user:password."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return "the URL is not valid"
    if parts.scheme.lower() != "https":
        return "only https:// targets are called"
    if not parts.hostname:
        return "the URL has no host"
    if parts.username is not None or parts.password is not None:
        return "the URL must not contain user:password@"
    return None


def address_refusal(address: str, allow_private: bool = False) -> str | None:
    """Why an action must not connect to ``address`` (an IP address as text); None when it
    may. Refused: loopback, private, link-local, cloud metadata, multicast, unspecified,
    reserved and every other non-global range; IPv4-mapped IPv6 addresses are judged as
    the IPv4 address they carry."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA:
        return f"{ip} is a cloud metadata address"
    if allow_private:
        return None
    for test, what in (
        (ip.is_loopback, "a loopback"),
        (ip.is_unspecified, "an unspecified"),
        (ip.is_link_local, "a link-local"),
        (ip.is_multicast, "a multicast"),
        (ip.is_private, "a private"),
        (ip.is_reserved, "a reserved"),
    ):
        if test:
            return f"{ip} is {what} address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


def addresses_refusal(host: str, addresses: list[str], allow_private: bool = False) -> str | None:
    """Why ``host``, resolved to ``addresses``, must not be called; None when every
    address may be."""
    if not addresses:
        return f"{host} did not resolve to any address"
    for address in addresses:
        refusal = address_refusal(address, allow_private)
        if refusal is not None:
            hint = "" if allow_private else " (ACTIONS_ALLOW_PRIVATE_TARGETS is off)"
            named = f"{host}: " if addresses != [host] else ""
            return f"{named}{refusal}{hint}; only public addresses are called"
    return None
