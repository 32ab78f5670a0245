"""Handlers of the action effects (``ragcore.actions.effects``)."""

from __future__ import annotations

import logging
import os
from urllib.parse import urlsplit

from ragcore.actions import effects
from ragcore.actions.approvals import ID_BYTES, approval_id
from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.effects import Sent, Ticket
from ragcore.actions.kinds import (
    ChatopsAction,
    EmailAction,
    WebhookAction,
    action_reach,
    describe,
)
from ragcore.actions.records import ActionRecord, chatops_body, webhook_body
from ragcore.actions.sends import post_sent
from ragcore.settings import Settings
from ragio.actions import store
from ragio.actions.mail import send_email
from ragio.actions.notify import notify_owner
from ragio.service import HandlerTable, Service
from ragio.targets.post import interfaces, post

log = logging.getLogger(__name__)


def new_id() -> str:
    return approval_id(os.urandom(ID_BYTES))


async def load_autonomy(effect: effects.LoadAutonomy, service: Service) -> AutonomyConfig:
    return await service.database.run(store.load_autonomy)


async def new_ticket(effect: effects.NewTicket, service: Service) -> Ticket:
    return Ticket(new_id(), service.clock.now())


async def save_action(effect: effects.SaveAction, service: Service) -> None:
    record = effect.record
    await service.database.run(store.save_action, record, effect.event, effect.detail)
    _log_event(record.id, effect.event, effect.detail, record)


async def load_action(effect: effects.LoadAction, service: Service) -> ActionRecord | None:
    return await service.database.run(store.load_action, effect.action_id)


async def claim_action(effect: effects.ClaimAction, service: Service) -> ActionRecord | None:
    aid, move, detail = effect.action_id, effect.move, effect.detail
    claimed = await service.database.run(
        store.claim_action, aid, move, effect.now, effect.by, detail, effect.before_expiry
    )
    if claimed is not None:
        _log_event(aid, move.event, detail, claimed)
    return claimed


async def finish_action(effect: effects.FinishAction, service: Service) -> ActionRecord:
    aid, move, detail = effect.action_id, effect.move, effect.detail
    finished = await service.database.run(store.finish_action, aid, move, detail)
    _log_event(aid, move.event, detail, finished)
    return finished


async def expire_overdue(effect: effects.ExpireOverdue, service: Service) -> list[str]:
    return await service.database.run(
        store.expire_overdue, effect.move, effect.now, effect.by, effect.detail
    )


async def fail_interrupted(effect: effects.FailInterrupted, service: Service) -> list[str]:
    return await service.database.run(
        store.fail_interrupted, effect.move, effect.now, effect.started_before, effect.reason
    )


async def note_action(effect: effects.NoteAction, service: Service) -> None:
    aid, event, detail = effect.action_id, effect.event, effect.detail
    await service.database.run(store.note_action, aid, event, detail)
    _log_event(aid, event, detail)


async def perform_action(effect: effects.PerformAction, service: Service) -> Sent:
    return await perform(service, effect.record)


async def notify(effect: effects.NotifyOwner, service: Service) -> Sent:
    return await notify_owner(service, effect.channel, effect.target, effect.text)


async def perform(service: Service, record: ActionRecord) -> Sent:
    """Send the action; a Sent that says how it went. Never raises."""
    settings = service.settings
    action = record.action
    try:
        if isinstance(action, WebhookAction):
            url = dict(settings.webhook_targets).get(action.target)
            if url is None:
                return Sent(False, f"no webhook target named {action.target!r} any more")
            body = webhook_body(record, service.clock.now())
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
    settings: Settings, name: str, url: str, body: bytes, headers: dict[str, str] | None = None
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


HANDLERS: HandlerTable = {
    effects.LoadAutonomy: load_autonomy,
    effects.NewTicket: new_ticket,
    effects.SaveAction: save_action,
    effects.LoadAction: load_action,
    effects.ClaimAction: claim_action,
    effects.FinishAction: finish_action,
    effects.ExpireOverdue: expire_overdue,
    effects.FailInterrupted: fail_interrupted,
    effects.NoteAction: note_action,
    effects.PerformAction: perform_action,
    effects.NotifyOwner: notify,
}
