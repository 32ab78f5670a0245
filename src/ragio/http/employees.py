"""/employees: the AI employees. List them (the first call seeds the nine built-in
roles), read one, and edit one or create a runtime role with PATCH; a role's memory
(``/employees/{role}/memory``) and the role context it injects into a prompt
(``/employees/{role}/context``)."""

from __future__ import annotations

from quart import Blueprint, request

from ragcore.api.employees import (
    ROLE_PATH,
    ContextQuery,
    Employee,
    EmployeePatch,
    Employees,
    Memory,
    MemoryItem,
    MemoryQuery,
    NewMemory,
    RoleContext,
    check_query,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.queries import read_query, stored_id
from ragcore.employees.editing import check_patch
from ragcore.employees.memory import (
    AlreadyRemembered,
    check_memory,
    embed_missing,
    parse_tags,
    remember,
    role_context,
)
from ragcore.employees.roles import check_role_identifier
from ragcore.employees.sensitivity import assess_sensitivity
from ragio.employees import memory, store
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import Problem
from ragio.providers.chain import embed
from ragio.runner import run

blueprint = Blueprint("employees", __name__)


def shown(stored: store.StoredRole) -> Employee:
    settings = service().settings
    sensitivity = assess_sensitivity(
        stored.role, settings.sensitive_roles_extra, settings.sensitive_roles_reviewed_safe
    )
    return Employee.of(stored.role, sensitivity, stored.created_at, stored.updated_at)


@blueprint.get("/employees")
@operation(Reply(200, "The roles, built-in first", Employees))
async def list_employees() -> Employees:
    """List the AI employees (the first call seeds the nine built-in roles)"""
    roles = await service().database.run(store.list_roles)
    return Employees([shown(stored) for stored in roles])


async def found_role(role: str) -> store.StoredRole:
    """The stored role, or a 404 problem saying how to find or create one."""
    identifier = check_role_identifier(role)
    found = await service().database.run(store.get_role, identifier)
    if found is None:
        raise Problem(
            404,
            f"no role {identifier!r}; GET /employees lists them, "
            "PATCH /employees/{role} with display_name and personality creates one",
        )
    return found


@blueprint.get("/employees/<role>")
@operation(Reply(200, "The role", Employee), 404, 422, path=ROLE_PATH)
async def get_employee(role: str) -> Employee:
    """One AI employee"""
    return shown(await found_role(role))


@blueprint.patch("/employees/<role>")
@operation(
    Reply(200, "Updated", Employee),
    Reply(201, "Created (Location: /employees/{role})", Employee),
    422,
    body=EmployeePatch,
    path=ROLE_PATH,
)
async def patch_employee(role: str) -> tuple[Employee, int, dict[str, str]]:
    """Change a role's fields, or create a runtime role"""
    identifier = check_role_identifier(role)
    patch = check_patch(await json_body(required=True))
    saved = await service().database.run(store.patch_role, identifier, patch)
    if saved.created:
        return shown(saved), 201, {"Location": f"/employees/{identifier}"}
    return shown(saved), 200, {}


@blueprint.get("/employees/<role>/memory")
@operation(Reply(200, "The items", Memory), 404, 422, query=MemoryQuery, path=ROLE_PATH)
async def list_memory(role: str) -> Memory:
    """A role's memory; search it by meaning and by tags"""
    identifier = (await found_role(role)).role.identifier
    tags = parse_tags(request.args.get("tags"))
    query = check_query(request.args.get("query"), required=False)
    limit = read_query(MemoryQuery, request.args).limit
    svc = service()
    vector = None
    if query is not None:
        await run(embed_missing(identifier), svc)
        [vector] = await embed(svc.embedder, [query], "query")
    items = await svc.database.run(memory.list_memory, identifier, tags, vector, limit)
    return Memory(identifier, [MemoryItem.of(item) for item in items])


@blueprint.post("/employees/<role>/memory")
@operation(
    Reply(201, "Stored (Location: its URL)", MemoryItem),
    404,
    409,
    422,
    body=NewMemory,
    path=ROLE_PATH,
)
async def add_memory(role: str) -> tuple[MemoryItem, int, dict[str, str]]:
    """Add a memory item to a role"""
    identifier = (await found_role(role)).role.identifier
    new = check_memory(await json_body(required=True))
    try:
        item = await run(remember(identifier, new), service())
    except AlreadyRemembered as duplicate:
        raise Problem(409, str(duplicate), existing_id=duplicate.existing_id) from None
    return MemoryItem.of(item), 201, {"Location": f"/employees/{identifier}/memory/{item.id}"}


@blueprint.delete("/employees/<role>/memory/<id>")
@operation(Reply(204, "Deleted"), 404, 422, path={**ROLE_PATH, "id": {"type": "integer"}})
async def delete_memory(role: str, id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Delete a memory item"""
    identifier = (await found_role(role)).role.identifier
    item = stored_id(id)
    if item is None or not await service().database.run(memory.delete_memory, identifier, item):
        raise Problem(404, f"role {identifier!r} has no memory item {id}")
    return "", 204


@blueprint.get("/employees/<role>/context")
@operation(
    Reply(200, "The text and the items it holds", RoleContext),
    404,
    422,
    query=ContextQuery,
    path=ROLE_PATH,
)
async def get_context(role: str) -> RoleContext:
    """The role context the role injects into a prompt for the query"""
    identifier = (await found_role(role)).role.identifier
    query = check_query(request.args.get("query"), required=True)
    context = await run(role_context(identifier, query), service())
    return RoleContext.of(identifier, query, context)
