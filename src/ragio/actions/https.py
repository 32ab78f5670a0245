"""POSTing an action to a webhook target or the chat-ops URL, safely.

- https only (``ragcore.actions.addresses.url_refusal``);
- the host is resolved once; every address it resolves to must be public
  (``addresses_refusal``; ``ACTIONS_ALLOW_PRIVATE_TARGETS=true`` lets loopback and
  private ones through for local testing, and every such call logs a warning);
- the connection goes to an address that was checked: the HTTP client's network backend
  is pinned to it, so the name is never looked up a second time (no DNS rebinding
  between the check and the call), while TLS still sends the name (SNI) and checks the
  certificate against it, and the Host header carries it;
- no redirect is followed: a 3xx is a failure that says so;
- the whole call, resolving included, has ACTIONS_TIMEOUT_SECONDS.

Certificates are checked against the system's authorities (certifi's bundle) plus, when
``ACTIONS_CA_BUNDLE`` names a PEM file, the authorities in it (a private CA; the tests
trust their own test CA this way). Logs name the target and its host, never the URL's
path or query, which may hold a secret.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import ssl
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore
import trio

from ragcore import __version__
from ragcore.actions.addresses import addresses_refusal, url_refusal
from ragcore.actions.effects import Sent

log = logging.getLogger(__name__)
USER_AGENT = f"ragchat/{__version__}"


class CertificatesUnreadable(ValueError):
    """ACTIONS_CA_BUNDLE names a file that is not a readable PEM bundle."""


@functools.lru_cache(maxsize=8)
def tls_context(ca_bundle: str = "") -> ssl.SSLContext:
    """Verification against certifi's authorities plus those in ``ca_bundle``, if any."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (OSError, ssl.SSLError) as error:
            raise CertificatesUnreadable(
                f"ACTIONS_CA_BUNDLE={ca_bundle!r} cannot be read as PEM certificates "
                f"({type(error).__name__})"
            ) from None
    return context


def settings_context(settings: Any) -> ssl.SSLContext:
    return tls_context(settings.actions_ca_bundle.strip())


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order (an IP address is its
    own). The one lookup of a call: tests replace it to point a name at 127.0.0.1."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    found: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


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


def _where(name: str, host: str) -> str:
    return f"{name} ({host})"


async def post_json(
    settings: Any, name: str, url: str, body: bytes, headers: dict[str, str] | None = None
) -> Sent:
    """POST ``body`` to ``url`` (called ``name`` in logs and reasons); never raises."""
    refusal = url_refusal(url)
    if refusal is not None:
        return Sent(False, f"{name}: {refusal}")
    parts = urlsplit(url)
    host, port = str(parts.hostname), parts.port or 443
    timeout = float(settings.actions_timeout_seconds)
    allow_private = bool(settings.actions_allow_private_targets)
    try:
        context = settings_context(settings)
    except CertificatesUnreadable as error:
        return Sent(False, str(error))
    with trio.move_on_after(timeout):
        try:
            addresses = await resolve(host, port)
        except OSError:
            return Sent(False, f"{_where(name, host)}: the name could not be resolved")
        refusal = addresses_refusal(host, addresses, allow_private)
        if refusal is not None:
            log.warning("action call to %s refused: %s", name, refusal)
            return Sent(False, f"{name}: {refusal}")
        if allow_private:
            log.warning(
                "ACTIONS_ALLOW_PRIVATE_TARGETS=true: calling %s without the public-address "
                "check; turn it off outside local testing",
                _where(name, host),
            )
        failure = ""
        for address in addresses:
            try:
                status = await _post_to(address, host, port, parts, body, headers, context, timeout)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = _connect_failure(error)
                continue  # nothing was sent: the next checked address may answer
            except httpcore.TimeoutException:
                return Sent(False, f"{_where(name, host)}: no answer within {timeout:g} s")
            except (httpcore.ProtocolError, httpcore.NetworkError) as error:
                return Sent(False, f"{_where(name, host)}: {type(error).__name__}")
            return _judged(name, host, status)
        return Sent(False, f"{_where(name, host)}: could not connect ({failure})")
    return Sent(False, f"{_where(name, host)}: timed out after {timeout:g} s")


async def _post_to(
    address: str,
    host: str,
    port: int,
    parts: Any,
    body: bytes,
    headers: dict[str, str] | None,
    context: ssl.SSLContext,
    timeout: float,
) -> int:
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    url = httpcore.URL(
        scheme=b"https", host=host.encode("idna"), port=port, target=target.encode("ascii")
    )
    sent_headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **(headers or {}),
    }
    async with (
        httpcore.AsyncConnectionPool(
            ssl_context=context, network_backend=_Pinned(address), retries=0
        ) as pool,
        pool.stream(
            "POST",
            url,
            headers=list(sent_headers.items()),
            content=body,
            extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout)},
        ) as response,
    ):
        return response.status


def _connect_failure(error: BaseException) -> str:
    chain, cause = [], error
    while cause is not None and len(chain) < 5:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " ".join(f"{type(e).__name__} {e}" for e in chain)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return "its TLS certificate is not trusted (see ACTIONS_CA_BUNDLE)"
    if "hostname" in text.lower() and "match" in text.lower():
        return "its TLS certificate is for another name"
    return type(error).__name__ + (f": {error}" if str(error) else "")


def _judged(name: str, host: str, status: int) -> Sent:
    if 200 <= status < 300:
        return Sent(True, f"{_where(name, host)} answered HTTP {status}")
    if 300 <= status < 400:
        return Sent(
            False,
            f"{_where(name, host)} answered a redirect (HTTP {status}), which is not followed",
        )
    return Sent(False, f"{_where(name, host)} answered HTTP {status}")
