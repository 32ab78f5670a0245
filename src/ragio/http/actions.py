"""Autonomy and outbound actions over HTTP (API-key holders: the owner's side).

``GET``/``POST /autonomy`` read and change the autonomy setting; ``POST /actions``
submits an action through the gate; ``GET /actions/{id}`` shows one;
``GET /autonomy/pending`` lists the held actions, ``POST
/autonomy/pending/{id}/approve`` and ``…/reject`` decide one; ``GET /autonomy/log`` lists
every decision and result. The rules are ``ragcore.actions``; the sends ``ragio.actions``.
"""

from __future__ import annotations

import logging

from quart import Blueprint, request

from ragcore.actions.approvals import normalize_id
from ragcore.actions.autonomy import ActingRole, check_update
from ragcore.actions.flow import ActionPolicy, Submission, submit_action
from ragcore.actions.kinds import check_action
from ragcore.actions.records import ActionRecord
from ragcore.api.actions import (
    ACTION_ID,
    NEW_ACTION,
    Action,
    ActionLog,
    ActionLogEntry,
    ActionLogQuery,
    AutonomySetting,
    AutonomyUpdate,
    PendingActions,
    decided,
    submitted,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.queries import read_query
from ragcore.errors import InvalidInput
from ragio.actions import store
from ragio.actions.approvals import decide, settle
from ragio.employees.lookup import stored_role
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import Problem
from ragio.runner import run

blueprint = Blueprint("actions", __name__)
log = logging.getLogger(__name__)
BY_ID = {"path": {"id": ACTION_ID}}
DECISION_CONFLICTS = (404, 409, 410)


@blueprint.get("/autonomy")
@operation(Reply(200, "The setting", AutonomySetting))
async def get_autonomy() -> AutonomySetting:
    """The autonomy setting and what each action kind can reach"""
    svc = service()
    return AutonomySetting.of(await svc.database.run(store.load_autonomy), svc.settings)


@blueprint.post("/autonomy")
@operation(Reply(200, "The setting as saved", AutonomySetting), 422, body=AutonomyUpdate)
async def post_autonomy() -> AutonomySetting:
    """Change the autonomy setting: mode, the owner for approvals, kinds"""
    svc = service()
    body = await json_body(required=True)
    current = await svc.database.run(store.load_autonomy)
    saved = await svc.database.run(store.save_autonomy, check_update(body, current))
    log.info(
        "autonomy set: mode %s, kinds %s, sensitive roles %s, approvals on %s",
        saved.mode,
        ",".join(saved.allowed_kinds) or "none",
        saved.sensitive_roles,
        saved.approval_channel or "the API only",
    )
    return AutonomySetting.of(saved, svc.settings)


@blueprint.post("/actions")
@operation(
    Reply(200, "Executed (full autonomy)", Action),
    Reply(202, "Held for the owner's approval (semi)", Action),
    *(403, 404, 422, 502),
    body=NEW_ACTION,
)
async def post_action() -> tuple[Action, int, dict[str, str]]:
    """Submit an outbound action; it goes through the autonomy gate

    Optionally as a role: then the role's autonomy and sensitivity apply too."""
    svc = service()
    body = dict(await json_body(required=True))
    role_name = body.pop("role", None)
    action = check_action(body)
    acting = None
    if role_name is not None:  # an unknown one is 404 (ragio.http.problems)
        role = await stored_role(svc.database, role_name)
        settings = svc.settings
        acting = ActingRole.of(
            role, settings.sensitive_roles_extra, settings.sensitive_roles_reviewed_safe
        )
    policy = ActionPolicy.from_settings(svc.settings)
    record = await run(submit_action(Submission(action, "api", acting), policy), svc)
    return Action.of(record), submitted(record), {"Location": f"/actions/{record.id}"}


@blueprint.get("/actions/<id>")
@operation(Reply(200, "The action", Action), 404, **BY_ID)
async def get_action(id: str) -> Action:  # noqa: A002 (the path's name)
    """One action"""
    found = await _load(id)
    if found is None:
        raise Problem(404, f"no action {id[:20]!r}; GET /autonomy/log lists them")
    return Action.of(found)


async def _load(raw: str) -> ActionRecord | None:
    action_id = normalize_id(raw)
    if action_id is None:
        return None
    await settle(service())  # what time alone decided, before it is shown
    return await service().database.run(store.load_action, action_id)


@blueprint.get("/autonomy/pending")
@operation(Reply(200, "The held actions", PendingActions))
async def list_pending() -> PendingActions:
    """The actions waiting for the owner, oldest first"""
    await settle(service())  # what time alone decided, before it is shown
    pending = await service().database.run(store.pending_actions, service().clock.now())
    return PendingActions([Action.of(record) for record in pending])


@blueprint.post("/autonomy/pending/<id>/approve")
@operation(Reply(200, "Approved and sent", Action), *DECISION_CONFLICTS, 502, **BY_ID)
async def approve(id: str) -> Action:  # noqa: A002 (the path's name)
    """Approve a held action: it is sent now"""
    return await _decide(id, "approve")


@blueprint.post("/autonomy/pending/<id>/reject")
@operation(Reply(200, "Rejected", Action), *DECISION_CONFLICTS, **BY_ID)
async def reject(id: str) -> Action:  # noqa: A002 (the path's name)
    """Reject a held action: nothing is sent"""
    return await _decide(id, "reject")


async def _decide(raw: str, verdict: str) -> Action:
    decision = await decide(service(), raw, verdict, "api")
    named = decision.action_id or raw[:20]
    return Action.of(decided(decision.judgement, decision.record, named))


@blueprint.get("/autonomy/log")
@operation(Reply(200, "The log", ActionLog), 422, query=ActionLogQuery)
async def get_log() -> ActionLog:
    """Every decision and result, newest first"""
    query = read_query(ActionLogQuery, request.args)
    action_id = normalize_id(query.action) if query.action else None
    if query.action and action_id is None:
        raise InvalidInput("action", "must be an action id (10 letters and digits)")
    await settle(service())  # what time alone decided, before it is shown
    entries = await service().database.run(
        store.action_log, query.limit, query.before or None, action_id
    )
    next_before = entries[-1].id if len(entries) == query.limit else None
    return ActionLog([ActionLogEntry.of(e) for e in entries], next_before)
