"""Calling the automation workflows after a reply (SPEC section 6).

``fire_workflows`` is what a channel adapter awaits, in a background task, once its
reply is sent: every active workflow on that channel gets the JSON POST, at most
``CONCURRENCY`` at once, each attempt bounded by ``policy.timeout_seconds`` and
retried as ``ragcore.retry`` decides. Every attempt goes through
``ragio.targets.post``: the host resolved once, every address checked against the
workflow rules (``workflow_reach``: loopback and private addresses only with
WORKFLOW_ALLOW_PRIVATE_TARGETS, link-local and metadata never, nor the service itself),
the connection pinned to a checked address, no redirect followed. A refused target is
not retried. It never raises (a broken or slow workflow must not break the reply, rule 2)
and stays cancellable: cancelling the task that runs it stops every call at once.

``try_workflow`` is the owner's test of one workflow (POST
/automation-workflows/{id}/test): one attempt of a real call, made now, with a test body.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from urllib.parse import urlsplit

import attrs
import trio

from ragcore.retry import Outcome, RetryPolicy, next_delay
from ragcore.settings import Settings, signing_key
from ragcore.targets.addresses import Reach
from ragcore.workflows.definitions import Workflow, workflow_reach
from ragcore.workflows.matching import firing
from ragcore.workflows.payload import request_headers, workflow_body, workflow_test_body
from ragio.clock import Clock
from ragio.service import Service
from ragio.targets.post import interfaces, post
from ragio.workflows import store

log = logging.getLogger(__name__)
DEFAULT_POLICY = RetryPolicy()
CONCURRENCY = 4  # calls in flight at once for one reply


async def fire_workflows(
    service: Service,
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
        target = _Target.of(service.settings)
        limiter = trio.CapacityLimiter(CONCURRENCY)
        async with trio.open_nursery() as nursery:
            for workflow in due:
                nursery.start_soon(_call, target, workflow, body, policy, limiter, service.clock)
    except Exception as error:  # never raise to the channel adapter
        log.warning("workflows for a %s reply were not called: %s", channel, type(error).__name__)


async def try_workflow(
    service: Service, workflow: Workflow, *, policy: RetryPolicy = DEFAULT_POLICY
) -> tuple[Outcome, int]:
    """Call ``workflow`` now, once, with the test body (``workflow_test_body``, on its
    first channel), active or not: as a real call's first attempt (the same reach,
    timeout and signing), without retries. How it ended, and the milliseconds it took."""
    body = workflow_test_body(workflow.id, workflow.channels)
    started = trio.current_time()
    outcome = await _attempt(
        _Target.of(service.settings), workflow, body, _message_id(), policy, service.clock.now()
    )
    elapsed_ms = round((trio.current_time() - started) * 1000)
    log.info(
        "workflow %s %r at %s tested: %s",
        workflow.id,
        workflow.name,
        _host(workflow.webhook_url),
        outcome.describe(),
    )
    return outcome, elapsed_ms


@attrs.frozen
class _Target:
    """Where workflow calls may go, the extra authorities https trusts, and the key that
    signs them (None: unsigned)."""

    reach: Reach
    ca_bundle: str
    key: bytes | None

    @classmethod
    def of(cls, settings: Settings) -> _Target:
        secret = settings.workflow_signing_secret
        key = signing_key(secret) if secret else None
        reach = workflow_reach(settings, interfaces(settings))
        return cls(reach, settings.actions_ca_bundle, key)


def _message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


async def _call(
    target: _Target,
    workflow: Workflow,
    body: bytes,
    policy: RetryPolicy,
    limiter: trio.CapacityLimiter,
    clock: Clock,
) -> None:
    """One workflow's call with its retries; logs, never raises."""
    message_id = _message_id()  # the same on every retry of this call
    attempts = 0
    try:
        while True:
            async with limiter:
                attempts += 1
                sent_at = clock.now()
                outcome = await _attempt(target, workflow, body, message_id, policy, sent_at)
            delay = next_delay(policy, attempts, outcome, clock.now())
            if delay is None:
                break
            await trio.sleep(delay)
    except Exception as error:  # a bug here must not reach the adapter
        log.warning("workflow %s %r failed: %s", workflow.id, workflow.name, type(error).__name__)
        return
    if outcome.refused is not None:
        log.warning(
            "workflow %s %r at %s was not called: %s",
            workflow.id,
            workflow.name,
            _host(workflow.webhook_url),
            outcome.refused,
        )
    elif not outcome.delivered:
        log.warning(
            "workflow %s %r at %s was not called successfully: %s after %d attempt(s)",
            workflow.id,
            workflow.name,
            _host(workflow.webhook_url),
            outcome.describe(),
            attempts,
        )


async def _attempt(
    target: _Target,
    workflow: Workflow,
    body: bytes,
    message_id: str,
    policy: RetryPolicy,
    sent_at: datetime,
) -> Outcome:
    """One POST, bounded as a whole (resolving, connecting and the response's headers) by
    the policy's timeout. The response body is never read."""
    headers = request_headers(body, target.key, message_id, int(sent_at.timestamp()))
    return await post(
        workflow.webhook_url,
        body,
        headers,
        reach=target.reach,
        timeout=policy.timeout_seconds,
        ca_bundle=target.ca_bundle.strip(),
        name=f"workflow {workflow.id} {workflow.name!r}",
    )


def _host(url: str) -> str:
    """scheme://host[:port] only: a path or query may hold a token the owner keeps secret."""
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if ":" in str(parts.hostname) else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"
