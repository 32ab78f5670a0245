"""/live-actions: the owner's live-data actions (SPEC rule 9). List, create, read, edit
and delete one; dry-run one with the values given or found in a message; read the
execution log.

The rules of a body are ``ragcore.api.live_actions``'s: each field checked, and the
template checked against its source's kind when saved (422 naming ``template`` with the
reason, nothing stored). Every change drops the service's cached live results of the
action and has the actions read again (``Service.live``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from quart import Blueprint, request

from ragcore.api.live_actions import (
    DryRun,
    DryRunResult,
    LiveActionFields,
    LiveActionPatch,
    LiveActions,
    LiveActionView,
    NewLiveAction,
    Runs,
    RunsQuery,
    apply_patch,
    check_dry_run,
    check_new,
    check_patch,
    check_runnable,
    dry_run,
    switches_off,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.errors import InvalidInput, refuse_unknown_fields
from ragcore.live.templates import Template
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.live import store
from ragio.runner import run

log = logging.getLogger(__name__)
blueprint = Blueprint("live_actions", __name__)
PATH = "/live-actions"
ACTION_ID = {"path": {"id": {"type": "integer"}}}
ACTIONS = ("live action", PATH)


async def _found(raw: str) -> store.StoredAction:
    found = await service().database.run(store.get_action, path_id(raw, *ACTIONS))
    if found is None:
        raise no_such(raw, *ACTIONS)
    return found


async def _checked(fields: LiveActionFields) -> Template:
    """The action checked against its source's kind: 422 naming source_id when there is
    no such source, naming template (or triggers) when the action is refused."""
    source = await service().database.run(store.source_of, fields.source_id)
    if source is None:
        raise _unknown_source(fields.source_id)
    return check_runnable(fields, source[1])


def _unknown_source(source_id: int) -> InvalidInput:
    return InvalidInput("source_id", f"no data source {source_id}; GET /integrations lists them")


@contextmanager
def _saving(fields: LiveActionFields) -> Iterator[None]:
    """The store's refusals as problems: 409 for a taken name, 422 for a source deleted
    since it was checked."""
    try:
        yield
    except store.NameTaken as taken:
        raise ProblemError(
            409, f"a live action named {taken.name!r} exists; choose another name"
        ) from None
    except store.UnknownSource:
        raise _unknown_source(fields.source_id) from None


@blueprint.get(PATH)
@operation(Reply(200, "The live-data actions", LiveActions))
async def list_live_actions() -> LiveActions:
    """List the live-data actions, oldest first"""
    found = await service().database.run(store.list_actions)
    return LiveActions([action.view() for action in found])


@blueprint.post(PATH)
@operation(Reply(201, "Created (Location: its URL)", LiveActionView), 409, 422, body=NewLiveAction)
async def create_live_action() -> tuple[LiveActionView, int, dict[str, str]]:
    """Create a live-data action: a query template on a data source, and when it runs

    The template is checked against the source's kind (422 naming template with the
    reason). Refused too: an action that could never run (no trigger phrase and
    auto_match false) and a write template without a trigger phrase (writes are never
    auto-matched). 409: the name is taken."""
    fields = check_new(await json_body(required=True))
    await _checked(fields)
    with _saving(fields):
        created = await service().database.run(store.create_action, fields)
    service().live.changed(action_id=created.id)
    log.info("live action %s (%r) created", created.id, created.name)
    return created.view(), 201, {"Location": f"{PATH}/{created.id}"}


@blueprint.get(f"{PATH}/runs")
@operation(Reply(200, "A page of the execution log", Runs), 422, query=RunsQuery)
async def live_action_runs() -> Runs:
    """The execution log, newest first, paged with before= (filter: action_id=)

    Each run: the action, the channel, an HMAC of the values it ran with (never the
    values), the rows it returned or changed, how long it took and its outcome: ran,
    cached, failed, asked (a value was missing: nothing ran) or dry_run."""
    refuse_unknown_fields(request.args, ("limit", "before", "action_id"), listing="the parameters")
    query = read_query(RunsQuery, request.args)
    found = await service().database.run(
        store.list_runs, query.limit + 1, query.before, query.action_id
    )
    more = len(found) > query.limit
    found = found[: query.limit]
    return Runs(found, found[-1].id if more else None)


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The live action", LiveActionView), 404, **ACTION_ID)
async def get_live_action(id: str) -> LiveActionView:  # noqa: A002 (the path's name)
    """One live-data action, with its source and the values its template needs"""
    return (await _found(id)).view()


@blueprint.patch(f"{PATH}/<id>")
@operation(Reply(200, "Updated", LiveActionView), 404, 409, 422, body=LiveActionPatch, **ACTION_ID)
async def patch_live_action(id: str) -> LiveActionView:  # noqa: A002 (the path's name)
    """Change a live-data action's fields (enabled turns it on and off)

    The action is checked again as a whole: its template against the (new) source's
    kind, and that it can run; turning it off alone is always allowed."""
    existing = await _found(id)
    patch = check_patch(await json_body(required=True))
    fields = apply_patch(existing.fields(), patch)
    if not switches_off(patch):
        await _checked(fields)
    with _saving(fields):
        saved = await service().database.run(store.update_action, existing.id, fields)
    if saved is None:
        raise no_such(id, *ACTIONS)
    service().live.changed(action_id=saved.id)
    return saved.view()


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Deleted (its runs stay in the log)"), 404, **ACTION_ID)
async def delete_live_action(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Delete a live-data action"""
    action_id = path_id(id, *ACTIONS)
    if not await service().database.run(store.delete_action, action_id):
        raise no_such(id, *ACTIONS)
    service().live.changed(action_id=action_id)
    return "", 204


@blueprint.post(f"{PATH}/<id>/dry-run")
@operation(
    Reply(200, "What the query answered (or why the source failed)", DryRunResult),
    404,
    422,
    body=DryRun,
    body_required=False,
    **ACTION_ID,
)
async def dry_run_live_action(id: str) -> DryRunResult:  # noqa: A002 (the path's name)
    """Run a live action now, as a test: a write's transaction is rolled back

    The values come from values (by name) or from a message as a customer would write
    it; 422 names the missing ones. At most 50 rows are shown. 200 when the source fails
    too, with failed and its reason. The run is logged with outcome dry_run."""
    stored = await _found(id)
    asked = check_dry_run(await json_body(required=False))
    try:
        action = stored.live_action()
    except InvalidInput as refused:
        raise InvalidInput(
            "template", f"the saved template no longer passes its check: {refused.message}"
        ) from None
    return await run(dry_run(action, asked), service())
