"""/keys: API keys beside SERVICE_API_KEY, each with its scopes, limits and expiry
(``ragcore.api.keys``). Made (the key shown once), listed with their usage, changed and
revoked; admin's alone."""

from __future__ import annotations

from quart import Blueprint

from ragcore.api.keys import ApiKey, KeyCreated, KeyPatch, Keys, NewKey, check_new, check_patch
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id
from ragio import keys
from ragio.http.context import service
from ragio.http.inputs import json_body

blueprint = Blueprint("keys", __name__)
PATH = "/keys"
KEY_ID = {"path": {"id": {"type": "integer"}}}
KEYS = ("API key", PATH)  # what a path id names, and where they are listed


def _taken(name: str) -> ProblemError:
    return ProblemError(409, f"a key named {name[:80]!r} is in use already", field="name")


@blueprint.get(PATH)
@operation(Reply(200, "The keys, never the keys themselves", Keys))
async def list_keys() -> Keys:
    """List the API keys: in use first, then revoked, each with its usage

    SERVICE_API_KEY is not listed: it is the service's setting."""
    svc = service()
    return Keys(await svc.database.run(keys.list_keys, svc.clock.now()))


@blueprint.post(PATH)
@operation(
    Reply(201, "Made: the key is in `key`, shown only now", KeyCreated), 409, 422, body=NewKey
)
async def create_key() -> tuple[KeyCreated, int, dict[str, str]]:
    """Make an API key with its scopes, and optional limits and expiry

    The key is in the answer's `key`, and only there: it is kept as a hash. Send it as
    X-API-Key (or Authorization: Bearer)."""
    svc = service()
    fields: KeyPatch = check_new(await json_body(required=True))
    try:
        made = await svc.database.run(keys.create, fields, svc.clock.now())
    except keys.NameTaken as taken:
        raise _taken(taken.name) from None
    return made, 201, {"Location": f"{PATH}/{made.id}", "Cache-Control": "no-store"}


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The key, never the key itself", ApiKey), 404, **KEY_ID)
async def get_key(id: str) -> ApiKey:  # noqa: A002 (the path's name)
    """One API key, with its usage"""
    svc = service()
    found = await svc.database.run(keys.get, path_id(id, *KEYS), svc.clock.now())
    if found is None:
        raise no_such(id, *KEYS)
    return found


@blueprint.patch(f"{PATH}/<id>")
@operation(Reply(200, "Changed", ApiKey), 404, 409, 422, body=KeyPatch, **KEY_ID)
async def patch_key(id: str) -> ApiKey:  # noqa: A002 (the path's name)
    """Change a key's name, scopes, limits or expiry; at once, in every replica

    A revoked key cannot be changed (404)."""
    svc = service()
    patch = check_patch(await json_body(required=True))
    try:
        saved = await svc.database.run(keys.update, path_id(id, *KEYS), patch, svc.clock.now())
    except keys.NameTaken as taken:
        raise _taken(taken.name) from None
    if saved is None:
        raise ProblemError(404, f"no API key {id[:40]!r} in use; GET {PATH} lists them")
    return saved


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Revoked"), 404, **KEY_ID)
async def revoke_key(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Revoke a key: its next request, in any replica, is refused

    The key stays listed, revoked, so its usage keeps its name."""
    svc = service()
    if not await svc.database.run(keys.revoke, path_id(id, *KEYS), svc.clock.now()):
        raise no_such(id, *KEYS)
    return "", 204
