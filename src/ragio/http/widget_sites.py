"""/widget/sites: the websites the chat widget may run on, as the owner manages them
(with the API key). The rules live in ``ragcore.widget.sites``; docs/widget.md."""

from __future__ import annotations

import attrs
from quart import Blueprint

from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id
from ragcore.api.widget import IdentitySecret, NewSite, SiteCreated, Sites
from ragcore.channel_names import WEB
from ragcore.channels.routing import customer_roles
from ragcore.widget.sites import Site, SitePatch, check_new, check_patch
from ragio.employees.lookup import UnknownRole, stored_role
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.widget import store

blueprint = Blueprint("widget_sites", __name__)
PATH = "/widget/sites"
SITE_ID = {"path": {"id": {"type": "integer"}}}
SITES = ("site", PATH)  # what a path id names, and where they are listed


async def _checked(fields: SitePatch) -> SitePatch:
    """``fields`` when their role (if one is named) is a stored role (404 otherwise) that
    answers customers on the web (its ``channels`` include ``web``; 409 otherwise: the
    role's channels are to change, or the choice)."""
    if fields.role:
        try:
            role = await stored_role(service().database, fields.role)
        except UnknownRole as unknown:
            raise ProblemError(404, str(unknown), field="role") from None
        if not customer_roles([role], WEB):
            raise ProblemError(
                409,
                f"{role.identifier} does not answer customers on the web (its channels: "
                f"{', '.join(role.channels) or 'none'}); add web to its channels with PATCH "
                f"/employees/{role.identifier}, or choose a customer-facing role",
                field="role",
            )
    return fields


def _taken(name: str) -> ProblemError:
    return ProblemError(409, f"a site named {name[:80]!r} exists already", field="name")


@blueprint.get(PATH)
@operation(Reply(200, "The sites", Sites))
async def list_sites() -> Sites:
    """List the sites the chat widget may run on, oldest first"""
    return Sites(await service().database.run(store.list_sites))


@blueprint.post(PATH)
@operation(
    Reply(201, "Created (Location: its URL), with its identity secret, shown once", SiteCreated),
    404,
    409,
    422,
    body=NewSite,
)
async def create_site() -> tuple[SiteCreated, int, dict[str, str]]:
    """Add a website the chat widget may run on"""
    svc = service()
    fields = await _checked(check_new(await json_body(required=True)))
    secret = store.new_identity_secret()
    try:
        site = await svc.database.run(store.create_site, fields, secret, svc.clock.now())
    except store.NameTaken as taken:
        raise _taken(taken.name) from None
    shown = SiteCreated(**attrs.asdict(site, recurse=False), identity_secret=secret)
    return shown, 201, {"Location": f"{PATH}/{site.id}"}


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The site", Site), 404, **SITE_ID)
async def get_site(id: str) -> Site:  # noqa: A002 (the path's name)
    """One site"""
    found = await service().database.run(store.get_site, path_id(id, *SITES))
    if found is None:
        raise no_such(id, *SITES)
    return found


@blueprint.patch(f"{PATH}/<id>")
@operation(Reply(200, "Updated", Site), 404, 409, 422, body=SitePatch, **SITE_ID)
async def patch_site(id: str) -> Site:  # noqa: A002 (the path's name)
    """Change a site's fields (enabled: false stops it at once, on every replica)"""
    svc = service()
    site_id = path_id(id, *SITES)
    fields = await _checked(check_patch(await json_body(required=True)))
    try:
        saved = await svc.database.run(store.update_site, site_id, fields, svc.clock.now())
    except store.NameTaken as taken:
        raise _taken(taken.name) from None
    if saved is None:
        raise no_such(id, *SITES)
    return saved


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Deleted"), 404, **SITE_ID)
async def delete_site(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Delete a site: the widget stops on it (its conversations stay)"""
    if not await service().database.run(store.delete_site, path_id(id, *SITES)):
        raise no_such(id, *SITES)
    return "", 204


@blueprint.post(f"{PATH}/<id>/identity-secret")
@operation(Reply(201, "The new secret, shown once", IdentitySecret), 404, **SITE_ID)
async def new_identity_secret(id: str) -> tuple[IdentitySecret, int]:  # noqa: A002
    """Make a new identity secret for a site; the old one verifies no more"""
    svc = service()
    secret = store.new_identity_secret()
    changed = await svc.database.run(
        store.set_identity_secret, path_id(id, *SITES), secret, svc.clock.now()
    )
    if not changed:
        raise no_such(id, *SITES)
    return IdentitySecret(secret), 201


@blueprint.post(f"{PATH}/<id>/revoke-sessions")
@operation(Reply(204, "Every visitor token issued until now is refused"), 404, **SITE_ID)
async def revoke_sessions(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Refuse every visitor token of a site issued until now"""
    svc = service()
    if not await svc.database.run(store.revoke_sessions, path_id(id, *SITES), svc.clock.now()):
        raise no_such(id, *SITES)
    return "", 204
