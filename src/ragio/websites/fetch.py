"""Fetching a website's pages safely: the one way a crawl reaches the network.

- Every connection is judged by the address rules of workflows and data sources
  (``ragcore.targets.addresses``) under WEBSITES_ALLOW_PRIVATE_TARGETS: the host is
  resolved once, each address judged, and the connection goes to an address that passed
  (``Guarded``, the data sources' network backend); cloud metadata, link-local addresses,
  the service itself and its own database are refused always, loopback and private
  addresses unless the setting allows them.
- No redirect is followed here: the crawl judges each hop (``ragcore.websites.crawl``).
- A page has WEBSITES_TIMEOUT_SECONDS from the first lookup to the last byte of its body,
  so a server that trickles its answer (a slow-loris) is cut off; a body is counted as it
  streams in (decompressed) and dropped past WEBSITES_MAX_PAGE_MB.
- The request says who asks (``ragchat``, as robots.txt names the crawler) and, on a
  re-crawl, what it holds (``If-None-Match``, ``If-Modified-Since``).

``fetch`` never raises for a failed fetch: ``Fetched.failure`` says why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import httpx
import trio

from ragcore import __version__
from ragcore.integrations.addresses import targets
from ragcore.targets.addresses import Reach as Targets
from ragcore.targets.addresses import own_networks
from ragio.integrations.connectors.addresses import source_client
from ragio.integrations.connectors.base import Reach, SourceFailed
from ragio.integrations.reach import own_database
from ragio.service import Service
from ragio.targets.post import interfaces

USER_AGENT = f"ragchat/{__version__} (website crawler; robots.txt: ragchat)"
SETTING = "WEBSITES_ALLOW_PRIVATE_TARGETS"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,*/*;q=0.5"


@attrs.frozen
class Fetched:
    """What one GET brought: the status, headers and body, or why nothing usable came."""

    status: int = 0
    headers: httpx.Headers = attrs.field(factory=httpx.Headers)
    body: bytes = b""
    failure: str = ""


def crawl_targets(service: Service) -> Targets:
    """The address rules of crawls under the service's settings."""
    settings = service.settings
    return attrs.evolve(
        targets(
            settings.websites_allow_private_targets,
            settings.app_port,
            own_networks(settings.app_bind, interfaces(settings)),
        ),
        calls="website crawls",
        setting=SETTING,
        private_hint=f"set {SETTING}=true to crawl a site on this host or LAN",
    )


@asynccontextmanager
async def crawl_client(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for crawls: each connection judged and pinned, no redirect followed,
    no proxy from the environment."""
    settings = service.settings
    reach = Reach(
        settings.websites_timeout_seconds,
        False,
        clock=service.clock,
        targets=crawl_targets(service),
        own_database=await own_database(service.database.url, str(settings.data_dir)),
    )
    async with source_client(reach) as client:
        yield client


async def fetch(
    client: httpx.AsyncClient,
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    etag: str | None = None,
    last_modified: str | None = None,
) -> Fetched:
    """GET ``url`` within ``timeout`` seconds and ``max_bytes``; conditionally when
    ``etag`` or ``last_modified`` is known. Only a 2xx answer's body is read."""
    headers = {"user-agent": USER_AGENT, "accept": ACCEPT}
    if etag:
        headers["if-none-match"] = etag
    if last_modified:
        headers["if-modified-since"] = last_modified
    with trio.move_on_after(timeout):
        try:
            async with client.stream("GET", url, headers=headers) as response:
                if not 200 <= response.status_code < 300:
                    return Fetched(response.status_code, response.headers)
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return Fetched(failure=_too_large(max_bytes, f"says {int(declared):,} bytes"))
                body = bytearray()
                async for piece in response.aiter_bytes():
                    body += piece
                    if len(body) > max_bytes:
                        return Fetched(failure=_too_large(max_bytes, "sent more"))
                return Fetched(response.status_code, response.headers, bytes(body))
        except SourceFailed as refused:
            return Fetched(failure=f"refused: {refused.reason}")
        except httpx.TimeoutException:
            return Fetched(failure=f"no answer within {timeout:g} s")
        except httpx.HTTPError as error:
            return Fetched(failure=_failure(error))
    return Fetched(failure=f"no complete answer within {timeout:g} s (WEBSITES_TIMEOUT_SECONDS)")


def _too_large(max_bytes: int, how: str) -> str:
    return (
        f"larger than WEBSITES_MAX_PAGE_MB ({max_bytes / 2**20:g} MB): it {how}; "
        "nothing more was read"
    )


def _failure(error: httpx.HTTPError) -> str:
    cause = error.__cause__ or error.__context__
    detail = str(error) or (str(cause) if cause else "")
    return f"could not fetch it ({type(error).__name__}{': ' + detail[:200] if detail else ''})"
