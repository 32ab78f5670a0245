"""/automation-workflows: the webhooks called after the AI replies on a wired text
channel. List them (filters ``?channel=`` and ``?is_active=``), create, read, edit,
delete and test one. The rules live in ``ragcore.workflows.definitions``; the calls
themselves, the owner's test call too, in ``ragio.workflows.dispatch``. A
``webhook_url`` is checked against the address rules before it is stored
(``ragio.targets.post.save_refusal``): 422 naming the field and the reason, nothing
stored; the calls check it again each time."""

from __future__ import annotations

from quart import Blueprint, request

from ragcore.api.operations import Reply, operation
from ragcore.api.queries import no_such, path_id
from ragcore.api.workflows import (
    NewWorkflow,
    WorkflowFilters,
    WorkflowPatch,
    Workflows,
    WorkflowTestResult,
    call_result,
)
from ragcore.errors import InvalidInput
from ragcore.workflows.definitions import (
    Workflow,
    check_filters,
    check_new,
    check_patch,
    workflow_reach,
)
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.targets.post import interfaces, save_refusal
from ragio.workflows import store
from ragio.workflows.dispatch import try_workflow

blueprint = Blueprint("workflows", __name__)
PATH = "/automation-workflows"
WORKFLOW_ID = {"path": {"id": {"type": "integer"}}}
WORKFLOWS = ("workflow", PATH)  # what a path id names, and where they are listed


async def _check_target(fields: WorkflowPatch) -> WorkflowPatch:
    """``fields`` when their webhook_url (if given) is one a workflow call may reach;
    InvalidInput naming webhook_url and why not otherwise."""
    if fields.webhook_url is not None:
        settings = service().settings
        reach = workflow_reach(settings, interfaces(settings))
        refusal = await save_refusal(fields.webhook_url, reach)
        if refusal is not None:
            raise InvalidInput("webhook_url", refusal)
    return fields


@blueprint.get(PATH)
@operation(Reply(200, "The workflows", Workflows), 422, query=WorkflowFilters)
async def list_workflows() -> Workflows:
    """List the automation workflows, oldest first"""
    filters = check_filters(request.args.items(multi=True))
    found = await service().database.run(store.list_workflows, filters)
    return Workflows(found)


@blueprint.post(PATH)
@operation(Reply(201, "Created (Location: its URL)", Workflow), 422, body=NewWorkflow)
async def create_workflow() -> tuple[Workflow, int, dict[str, str]]:
    """Create a workflow: a webhook called after replies on its channels"""
    new = await _check_target(check_new(await json_body(required=True)))
    created = await service().database.run(store.create_workflow, new)
    return created, 201, {"Location": f"{PATH}/{created.id}"}


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The workflow", Workflow), 404, **WORKFLOW_ID)
async def get_workflow(id: str) -> Workflow:  # noqa: A002 (the path's name)
    """One workflow"""
    found = await service().database.run(store.get_workflow, path_id(id, *WORKFLOWS))
    if found is None:
        raise no_such(id, *WORKFLOWS)
    return found


@blueprint.patch(f"{PATH}/<id>")
@operation(Reply(200, "Updated", Workflow), 404, 422, body=WorkflowPatch, **WORKFLOW_ID)
async def patch_workflow(id: str) -> Workflow:  # noqa: A002 (the path's name)
    """Change a workflow's fields (is_active turns it on and off)"""
    workflow_id = path_id(id, *WORKFLOWS)
    patch = await _check_target(check_patch(await json_body(required=True)))
    saved = await service().database.run(store.patch_workflow, workflow_id, patch)
    if saved is None:
        raise no_such(id, *WORKFLOWS)
    return saved


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Deleted"), 404, **WORKFLOW_ID)
async def delete_workflow(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Delete a workflow"""
    if not await service().database.run(store.delete_workflow, path_id(id, *WORKFLOWS)):
        raise no_such(id, *WORKFLOWS)
    return "", 204


@blueprint.post(f"{PATH}/<id>/test")
@operation(
    Reply(200, "Called: ok, with the receiver's status, or why not", WorkflowTestResult),
    404,
    **WORKFLOW_ID,
)
async def test_workflow(id: str) -> WorkflowTestResult:  # noqa: A002 (the path's name)
    """Call a workflow now, once, with a test payload, as a reply would call it

    The body has a real call's shape, on the workflow's first channel, with a message
    and ai_reply saying it is a test and "test": true in its context; signed when
    WORKFLOW_SIGNING_SECRET is set; the same address rules and timeout, no retry. An
    inactive workflow is called too. 200 either way: ok false with the status, or why
    there was none (a refused target is not called)."""
    svc = service()
    found = await svc.database.run(store.get_workflow, path_id(id, *WORKFLOWS))
    if found is None:
        raise no_such(id, *WORKFLOWS)
    return call_result(*await try_workflow(svc, found))
