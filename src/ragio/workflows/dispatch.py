"""Calling the automation workflows after a reply (SPEC section 6).

``fire_workflows`` is what a channel adapter awaits, in a background task, once its
reply is sent: every active workflow on that channel gets the JSON POST, at most
``policy.concurrency`` at once, each attempt bounded by ``policy.timeout_seconds`` and
retried as ``ragcore.workflows.delivery`` decides. It never raises (a broken or slow
workflow must not break the reply, rule 2) and stays cancellable: cancelling the task
that runs it stops every call at once.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import trio

from ragcore.workflows.definitions import Workflow
from ragcore.workflows.delivery import Outcome, RetryPolicy, next_delay
from ragcore.workflows.matching import firing
from ragcore.workflows.payload import request_headers, signing_key, workflow_body
from ragio.workflows import store

log = logging.getLogger(__name__)
DEFAULT_POLICY = RetryPolicy()


async def fire_workflows(
    service: Any,
    channel: str,
    message: str,
    ai_reply: str,
    context: dict,
    *,
    policy: RetryPolicy = DEFAULT_POLICY,
) -> None:
    """POST ``{channel, message, ai_reply, context}`` to every active workflow whose channels
    include ``channel``; signed when WORKFLOW_SIGNING_SECRET is set. Failures are logged
    as warnings (naming the workflow and its host, never its path or a secret)."""
    try:
        workflows = await service.database.run(store.active_workflows)
        due = firing(workflows, channel)
        if not due:
            return
        body = workflow_body(channel, message, ai_reply, context)
        secret = service.settings.workflow_signing_secret
        key = signing_key(secret) if secret else None
        limiter = trio.CapacityLimiter(policy.concurrency)
        async with trio.open_nursery() as nursery:
            for workflow in due:
                nursery.start_soon(_call, service.outbound, workflow, body, key, policy, limiter)
    except Exception as error:  # never raise to the channel adapter
        log.warning("workflows for a %s reply were not called: %s", channel, type(error).__name__)


async def _call(
    client: httpx.AsyncClient,
    workflow: Workflow,
    body: bytes,
    key: bytes | None,
    policy: RetryPolicy,
    limiter: trio.CapacityLimiter,
) -> None:
    """One workflow's call with its retries; logs, never raises."""
    message_id = f"msg_{uuid.uuid4().hex}"  # the same on every retry of this call
    attempts = 0
    try:
        while True:
            async with limiter:
                attempts += 1
                outcome = await _attempt(
                    client, workflow.webhook_url, body, key, message_id, policy
                )
            delay = next_delay(policy, attempts, outcome, datetime.now(UTC))
            if delay is None:
                break
            await trio.sleep(delay)
    except Exception as error:  # a bug here must not reach the adapter
        log.warning("workflow %s %r failed: %s", workflow.id, workflow.name, type(error).__name__)
        return
    if not outcome.delivered:
        log.warning(
            "workflow %s %r at %s was not called successfully: %s after %d attempt(s)",
            workflow.id,
            workflow.name,
            _host(workflow.webhook_url),
            outcome.describe(),
            attempts,
        )


async def _attempt(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    key: bytes | None,
    message_id: str,
    policy: RetryPolicy,
) -> Outcome:
    """One POST, bounded as a whole by the policy's timeout (httpx's own timeouts bound each
    read, so a receiver dripping bytes could otherwise hold it longer). The response body
    is never read."""
    headers = request_headers(body, key, message_id, int(time.time()))
    with trio.move_on_after(policy.timeout_seconds):
        try:
            async with client.stream(
                "POST", url, content=body, headers=headers, timeout=policy.timeout_seconds
            ) as response:
                retry_after = response.headers.get("retry-after")
                return Outcome(response.status_code, retry_after=retry_after)
        except httpx.TimeoutException:
            return Outcome(timed_out=True)
        except httpx.TransportError:
            return Outcome()
    return Outcome(timed_out=True)


def _host(url: str) -> str:
    """scheme://host[:port] only: a path or query may hold a token the owner keeps secret."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"
