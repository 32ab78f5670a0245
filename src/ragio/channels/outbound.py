"""Calls to the platforms' REST APIs: retried a little, reported without secrets.

Telegram puts the bot token in the URL path and Discord the interaction token, and
httpx logs every request's URL at INFO: a filter on its logger masks both, so the
service log never holds them. Failures are reported by platform, status and the
platform's own short description, never with the URL.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx
import trio

log = logging.getLogger(__name__)
RETRIES = 2  # after the first try: on timeouts, connection failures, 429 and 5xx
BACKOFF_SECONDS = (0.5, 2.0)
MAX_WAIT_SECONDS = 5.0  # a longer Retry-After is not worth holding a reply for
_SECRETS_IN_URLS = (
    (re.compile(r"/bot[0-9]+:[A-Za-z0-9_-]+"), "/bot<token>"),
    (re.compile(r"(/webhooks/[0-9]+/)[^/?\s\"']+"), r"\1<token>"),
)


def redact(text: str) -> str:
    """``text`` with bot and interaction tokens in URL paths masked."""
    for pattern, replacement in _SECRETS_IN_URLS:
        text = pattern.sub(replacement, text)
    return text


class _RedactTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact(str(a)) if isinstance(a, str | httpx.URL) else a for a in record.args
            )
        return True


def _install_redaction() -> None:
    logger = logging.getLogger("httpx")
    if not any(isinstance(f, _RedactTokens) for f in logger.filters):
        logger.addFilter(_RedactTokens())


_install_redaction()


class SendFailed(Exception):
    """A platform did not take a reply; the message names the platform and why."""

    def __init__(self, platform: str, reason: str, status: int | None = None):
        self.platform = platform
        self.status = status
        super().__init__(f"{platform}: {reason}")


async def call(
    client: httpx.AsyncClient,
    platform: str,
    method: str,
    url: str,
    **kwargs: Any,
) -> httpx.Response:
    """``method url`` with ``kwargs`` (json, data, auth, headers); the 2xx response, or
    SendFailed after retrying timeouts, connection failures, 429 and 5xx twice."""
    reason = ""
    status = None
    for attempt in range(RETRIES + 1):
        wait = BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)]
        try:
            response = await client.request(method, url, **kwargs)
        except httpx.TimeoutException:
            reason, status = "timed out", None
        except httpx.TransportError as error:
            reason, status = f"could not connect ({type(error).__name__})", None
        else:
            if response.is_success:
                return response
            status = response.status_code
            reason = f"HTTP {status}: {describe(response)}"
            if status != 429 and status < 500:
                raise SendFailed(platform, reason, status)
            wait = retry_after(response) or wait
        if attempt < RETRIES:
            log.info("%s: %s; retrying", platform, reason)
            await trio.sleep(min(wait, MAX_WAIT_SECONDS))
    raise SendFailed(platform, reason, status)


def describe(response: httpx.Response) -> str:
    """The platform's own short error text (Telegram ``description``, Discord and the
    telephony provider ``message``), which names the problem but no credential."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase or "no details"
    if isinstance(body, dict):
        for key in ("description", "message"):
            if isinstance(body.get(key), str):
                return body[key][:200]
    return response.reason_phrase or "no details"


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the platform asks to wait: a Retry-After header, Discord's ``retry_after``
    or Telegram's ``parameters.retry_after``."""
    header = response.headers.get("retry-after")
    if header is not None:
        try:
            return max(float(header), 0.0)
        except ValueError:
            pass
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters")
    nested = parameters.get("retry_after") if isinstance(parameters, dict) else None
    for value in (body.get("retry_after"), nested):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return max(float(value), 0.0)
    return None
