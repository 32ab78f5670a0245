"""POSTing to a target the owner configured (a webhook or chat-ops action, an automation
workflow), safely: the one way every such call is made.

- the URL's scheme is one the kind of call uses, with a host and no user:password, and a
  host spelled as an address (in any spelling) or a localhost or metadata name is judged
  without a lookup (``ragcore.targets.addresses.url_refusal``);
- any other name is resolved once (``resolve``); every address it resolves to must pass
  the rules of the call's ``Reach`` (``addresses_refusal``);
- the connection goes to an address that was checked: the HTTP client's network backend
  is pinned to it, so the name is never looked up a second time (no DNS rebinding between
  the check and the call), while TLS still sends the name (SNI) and checks the
  certificate against it, and the Host header carries it;
- no redirect is followed: a 3xx is the answer, and the caller says it is not followed;
- the whole call, resolving included, has ``timeout`` seconds; the response body is
  never read.

``post`` never raises for a failed call: its ``ragcore.retry.Outcome`` says how the call
ended. A
connection to a loopback or private address that the call's setting allows is logged at
info level. Logs name the call and its host, never the URL's path or query, which may
hold a secret.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import string
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import httpcore
import psutil
import trio

from ragcore import __version__
from ragcore.retry import Outcome
from ragcore.settings import Settings
from ragcore.targets.addresses import (
    DEFAULT_PORTS,
    Reach,
    addresses_refusal,
    host_addresses,
    normal_host,
    private_kind,
    url_port,
    url_refusal,
)
from ragio.targets.tls import CertificatesUnreadable, tls_context

log = logging.getLogger(__name__)
USER_AGENT = f"ragchat/{__version__}"
#: how long saving a target waits for its name to resolve
RESOLVE_AT_SAVE_SECONDS = 2.0


async def resolve(host: str, port: int) -> list[str]:
    """Every address the name ``host`` resolves to, in the resolver's order: the one DNS
    lookup of a call (tests replace it to point a name at an address)."""
    infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    found: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


async def addresses_of(host: str, port: int) -> list[str]:
    """The addresses a (normalised) host stands for: what it spells, or what it resolves to."""
    known = host_addresses(host)
    return known if known is not None else await resolve(host, port)


def interfaces(settings: Settings) -> tuple[str, ...]:
    """This host's own addresses when APP_BIND is every interface (0.0.0.0 or ::), so a
    call to the service itself through one of them is refused; otherwise not needed."""
    try:
        every = ipaddress.ip_address(settings.app_bind).is_unspecified
    except ValueError:
        return ()
    if not every:
        return ()
    return tuple(
        address.address
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family in (socket.AF_INET, socket.AF_INET6)
    )


async def save_refusal(
    url: str, reach: Reach, timeout: float = RESOLVE_AT_SAVE_SECONDS
) -> str | None:
    """Why a target being saved is refused, or None: the URL rules, then the addresses its
    name resolves to now. A name that does not resolve within ``timeout`` (a typo, no DNS,
    a resolver outage) is not refused here: it is resolved and judged again at every
    call, which is what keeps a call safe (a name can change what it resolves to after
    it is saved), so saving only catches what it can see."""
    refusal = url_refusal(url, reach)
    if refusal is not None:
        return refusal
    parts = urlsplit(url)
    host = normal_host(str(parts.hostname))
    port = url_port(url)
    if host_addresses(host) is not None:
        return None  # an address or a localhost name: url_refusal judged it
    addresses: list[str] = []
    with trio.move_on_after(timeout), contextlib.suppress(OSError):
        addresses = await resolve(host, port)
    if not addresses:
        log.info("%s does not resolve now; it is resolved and checked at every call", host)
        return None
    return addresses_refusal(host, addresses, reach, port)


class _Pinned(httpcore.AsyncNetworkBackend):
    """A network backend that connects to one checked address whatever name it is given;
    TLS (SNI, certificate check) and the Host header still use the URL's name."""

    def __init__(self, address: str) -> None:
        self._address = address
        self._inner = httpcore.TrioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_tcp(
            self._address, port, timeout, local_address, socket_options
        )

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


async def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str] | None = None,
    *,
    reach: Reach,
    timeout: float,
    ca_bundle: str = "",
    name: str = "target",
) -> Outcome:
    """POST ``body`` (JSON) to ``url`` within ``reach``, in ``timeout`` seconds from the
    first lookup to the response's headers; ``name`` names the call in logs. Never raises
    for a failed call."""
    refusal = url_refusal(url, reach)
    if refusal is not None:
        return Outcome(refused=refusal)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = normal_host(str(parts.hostname))
    port = url_port(url)
    context = None
    if scheme == "https":
        try:
            context = tls_context(ca_bundle)
        except CertificatesUnreadable as error:
            return Outcome(failure=str(error))
    with trio.move_on_after(timeout):
        try:
            addresses = await addresses_of(host, port)
        except OSError:
            return Outcome(failure="the name could not be resolved")
        refusal = addresses_refusal(host, addresses, reach, port)
        if refusal is not None:
            return Outcome(refused=refusal)
        failure = ""
        for address in addresses:
            kind = private_kind(address)
            if kind is not None:
                log.info(
                    "%s (%s): connecting to %s, %s, as %s=true allows",
                    name,
                    host,
                    address,
                    kind,
                    reach.setting,
                )
            try:
                status, retry_after = await _post_to(
                    address, scheme, host, port, parts, body, headers, context, timeout
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = _connect_failure(error)
                continue  # nothing was sent: the next checked address may answer
            except httpcore.TimeoutException:
                return Outcome(timed_out=True, failure=f"no answer within {timeout:g} s")
            except (httpcore.ProtocolError, httpcore.NetworkError) as error:
                return Outcome(failure=type(error).__name__)
            return Outcome(status=status, retry_after=retry_after)
        return Outcome(failure=f"could not connect ({failure})")
    return Outcome(timed_out=True, failure=f"timed out after {timeout:g} s")


async def _post_to(
    address: str,
    scheme: str,
    host: str,
    port: int,
    parts: Any,
    body: bytes,
    headers: Mapping[str, str] | None,
    context: Any,
    timeout: float,
) -> tuple[int, str | None]:
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    target = quote(target, safe=string.punctuation)  # non-ASCII as UTF-8 %-escapes
    url = httpcore.URL(
        scheme=scheme.encode("ascii"),
        host=host.encode("ascii"),
        port=port,
        target=target.encode("ascii"),
    )
    named = f"[{host}]" if ":" in host else host
    sent = {
        "host": named if port == DEFAULT_PORTS[scheme] else f"{named}:{port}",
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
    sent.update({key.lower(): value for key, value in (headers or {}).items()})
    async with (
        httpcore.AsyncConnectionPool(
            ssl_context=context, network_backend=_Pinned(address), retries=0
        ) as pool,
        pool.stream(
            "POST",
            url,
            headers=list(sent.items()),
            content=body,
            extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout)},
        ) as response,
    ):
        retry_after = next(
            (v.decode("latin-1") for k, v in response.headers if k.lower() == b"retry-after"),
            None,
        )
        return response.status, retry_after


def _connect_failure(error: BaseException) -> str:
    chain: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and len(chain) < 5:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " ".join(f"{type(e).__name__} {e}" for e in chain)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return "its TLS certificate is not trusted (see ACTIONS_CA_BUNDLE)"
    if "hostname" in text.lower() and "match" in text.lower():
        return "its TLS certificate is for another name"
    return type(error).__name__ + (f": {error}" if str(error) else "")
