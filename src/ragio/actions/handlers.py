"""Executing the action effects (``ragcore.actions.effects``) for ``ragio.runner``."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ragcore.actions.approvals import ID_BYTES, approval_id
from ragcore.actions.effects import (
    ActionEffect,
    ClaimAction,
    ExpireOverdue,
    FailInterrupted,
    FinishAction,
    LoadAction,
    LoadAutonomy,
    NewTicket,
    NoteAction,
    NotifyOwner,
    PerformAction,
    SaveAction,
    Sent,
    Ticket,
)
from ragcore.actions.kinds import (
    ChatopsAction,
    EmailAction,
    WebhookAction,
    action_reach,
    describe,
)
from ragcore.actions.records import ActionRecord, chatops_body, webhook_body
from ragcore.actions.sends import post_sent
from ragio.actions import store
from ragio.actions.mail import send_email
from ragio.actions.notify import notify_owner
from ragio.targets.post import interfaces, post

log = logging.getLogger(__name__)


def now() -> datetime:
    """The clock the action code reads (tests replace it to pass time)."""
    return datetime.now(UTC)


def new_id() -> str:
    return approval_id(os.urandom(ID_BYTES))


async def execute(effect: ActionEffect, service: Any) -> Any:
    db = service.database
    match effect:
        case LoadAutonomy():
            return await db.run(store.load_autonomy)
        case NewTicket():
            return Ticket(new_id(), now())
        case SaveAction(record=record, event=event, detail=detail):
            await db.run(store.save_action, record, event, detail)
            _log_event(record.id, event, detail, record)
            return None
        case LoadAction(action_id=action_id):
            return await db.run(store.load_action, action_id)
        case ClaimAction(action_id=aid, move=move, now=at, by=by, detail=detail):
            claimed = await db.run(
                store.claim_action, aid, move, at, by, detail, effect.before_expiry
            )
            if claimed is not None:
                _log_event(aid, move.event, detail, claimed)
            return claimed
        case FinishAction(action_id=aid, move=move, detail=detail):
            finished = await db.run(store.finish_action, aid, move, detail)
            _log_event(aid, move.event, detail, finished)
            return finished
        case ExpireOverdue(move=move, now=at, by=by, detail=detail):
            return await db.run(store.expire_overdue, move, at, by, detail)
        case FailInterrupted(move=move, now=at, started_before=since, reason=reason):
            return await db.run(store.fail_interrupted, move, at, since, reason)
        case NoteAction(action_id=aid, event=event, detail=detail):
            await db.run(store.note_action, aid, event, detail)
            _log_event(aid, event, detail)
            return None
        case PerformAction(record=record):
            return await perform(service, record)
        case NotifyOwner(channel=channel, target=target, text=text):
            return await notify_owner(service, channel, target, text)
    raise TypeError(f"no handler for action effect {effect!r}")


async def perform(service: Any, record: ActionRecord) -> Sent:
    """Send the action; a Sent that says how it went. Never raises."""
    settings = service.settings
    action = record.action
    try:
        if isinstance(action, WebhookAction):
            url = dict(settings.webhook_targets).get(action.target)
            if url is None:
                return Sent(False, f"no webhook target named {action.target!r} any more")
            body = webhook_body(record, now())
            headers = {"X-Ragchat-Action": record.id}
            return await post_json(settings, f'webhook "{action.target}"', url, body, headers)
        if isinstance(action, EmailAction):
            return await send_email(settings, action, record.id)
        if isinstance(action, ChatopsAction):
            if not settings.chatops_webhook_url:
                return Sent(False, "CHATOPS_WEBHOOK_URL is not set")
            body = chatops_body(action.text)
            return await post_json(settings, "chat-ops", settings.chatops_webhook_url, body)
    except Exception as error:  # a send never raises into the pipeline
        log.exception("action %s failed unexpectedly", record.id)
        return Sent(False, f"unexpected error ({type(error).__name__})")
    return Sent(False, f"unknown action kind {action.kind}")


async def post_json(
    settings: Any, name: str, url: str, body: bytes, headers: dict[str, str] | None = None
) -> Sent:
    """POST an action's ``body`` to ``url`` (called ``name`` in logs and reasons) through
    ``ragio.targets.post``: https, public addresses only unless
    ACTIONS_ALLOW_PRIVATE_TARGETS, pinned, no redirect, ACTIONS_TIMEOUT_SECONDS in all."""
    host = str(urlsplit(url).hostname or "")
    where = f"{name} ({host})"
    reach = action_reach(settings, interfaces(settings))
    if reach.allow_private:
        log.warning(
            "ACTIONS_ALLOW_PRIVATE_TARGETS=true: calling %s with loopback and private "
            "addresses allowed; turn it off outside local testing",
            where,
        )
    timeout = float(settings.actions_timeout_seconds)
    outcome = await post(
        url,
        body,
        headers,
        reach=reach,
        timeout=timeout,
        ca_bundle=settings.actions_ca_bundle.strip(),
        name=name,
    )
    if outcome.refused is not None:
        log.warning("action call to %s refused: %s", name, outcome.refused)
    return post_sent(name, host, outcome)


def _log_event(action_id: str, event: str, detail: str, record: ActionRecord | None = None) -> None:
    what = f" {describe(record.action)}" if record is not None else ""
    level = logging.WARNING if event in ("failed", "not_notified") else logging.INFO
    log.log(level, "action %s%s: %s (%s)", action_id, what, event, detail)
