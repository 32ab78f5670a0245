"""/employees: the AI employees. List them (the first call seeds the nine built-in
roles), read one, and edit one or create a runtime role with PATCH."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore.employees.editing import check_patch, role_view
from ragcore.employees.roles import check_role_identifier
from ragcore.employees.sensitivity import assess_sensitivity
from ragio.employees import store
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import Problem

blueprint = Blueprint("employees", __name__)


def role_json(stored: store.StoredRole) -> dict[str, Any]:
    settings = service().settings
    sensitivity = assess_sensitivity(
        stored.role, settings.sensitive_roles_extra, settings.sensitive_roles_reviewed_safe
    )
    return role_view(
        stored.role, sensitivity, created_at=stored.created_at, updated_at=stored.updated_at
    )


@blueprint.get("/employees")
async def list_employees() -> dict[str, Any]:
    roles = await service().database.run(store.list_roles)
    return {"employees": [role_json(stored) for stored in roles]}


@blueprint.get("/employees/<role>")
async def get_employee(role: str) -> dict[str, Any]:
    identifier = check_role_identifier(role)
    found = await service().database.run(store.get_role, identifier)
    if found is None:
        raise Problem(
            404,
            f"no role {identifier!r}; GET /employees lists them, "
            "PATCH /employees/{role} with display_name and personality creates one",
        )
    return role_json(found)


@blueprint.patch("/employees/<role>")
async def patch_employee(role: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    identifier = check_role_identifier(role)
    patch = check_patch(await json_body(required=True))
    saved = await service().database.run(store.patch_role, identifier, patch)
    if saved.created:
        return role_json(saved), 201, {"Location": f"/employees/{identifier}"}
    return role_json(saved), 200, {}
