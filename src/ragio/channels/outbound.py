"""Calls to the platforms' REST APIs: retried as ``ragcore.channels.retries`` says,
reported without secrets.

Telegram puts the bot token in the URL path and Discord the interaction token, and
httpx logs every request's URL at INFO: the service keeps httpx's logger at WARNING
(``ragio.logs``), and a filter on it masks both all the same, so that the log never
holds them even with httpx's lines turned on. Failures are reported by platform, status and the
platform's own short description, never with the URL.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx
import trio

from ragcore.channels.retries import PLATFORM_RETRY, asked_wait
from ragcore.retry import Outcome, next_delay

log = logging.getLogger(__name__)
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
    SendFailed once ``PLATFORM_RETRY`` gives up (timeouts, connection failures, 429 and
    5xx are retried twice)."""
    attempts = 0
    while True:
        attempts += 1
        try:
            response = await client.request(method, url, **kwargs)
        except httpx.TimeoutException:
            reason, status = "timed out", None
            outcome = Outcome(timed_out=True)
        except httpx.TransportError as error:
            reason, status = f"could not connect ({type(error).__name__})", None
            outcome = Outcome(failure=type(error).__name__)
        else:
            if response.is_success:
                return response
            status = response.status_code
            reason = f"HTTP {status}: {describe(response)}"
            asked = asked_wait(response.headers.get("retry-after"), _json(response))
            outcome = Outcome(status, retry_after=asked)
        delay = next_delay(PLATFORM_RETRY, attempts, outcome)
        if delay is None:
            raise SendFailed(platform, reason, status)
        log.info("%s: %s; retrying", platform, reason)
        await trio.sleep(delay)


def describe(response: httpx.Response) -> str:
    """The platform's own short error text (Telegram ``description``, Discord and the
    telephony provider ``message``), which names the problem but no credential."""
    body = _json(response)
    if isinstance(body, dict):
        for key in ("description", "message"):
            if isinstance(body.get(key), str):
                return body[key][:200]
    return response.reason_phrase or "no details"


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
