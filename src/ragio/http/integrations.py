"""/integrations: the data sources the owner connects. Create (JSON, or a CSV file as a
multipart upload), list, read, edit and delete one; test its connection; sync it in the
background; read what the syncs stored for one user.

The rules of a body are ``ragcore.integrations.kinds``'s (unknown and missing fields
named, 422, nothing stored); credentials are encrypted before they are stored
(``ragio.integrations.credentials``) and never shown: responses mask them. Syncing is
``ragio.integrations.sync``."""

from __future__ import annotations

import logging
from typing import Any

import trio
from quart import Blueprint, request

from ragcore.api.integrations import (
    UPLOAD_SCHEMA,
    Integration,
    IntegrationKinds,
    Integrations,
    Records,
    RecordsQuery,
    TestResult,
    body_schema,
    check_upload,
    kinds_described,
    upload_body,
)
from ragcore.api.operations import JSON, Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.errors import InvalidInput
from ragcore.integrations.records import user_key
from ragcore.knowledge.formats import decode_text
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.jobs import poke_worker
from ragio.integrations import sources, store, sync
from ragio.integrations.sync import SYNC
from ragio.jobs import store as jobs_store

log = logging.getLogger(__name__)
blueprint = Blueprint("integrations", __name__)
PATH = "/integrations"
SOURCE_ID = {"path": {"id": {"type": "integer"}}}
SOURCES = ("data source", PATH)


def _shown(source: store.Source) -> Integration:
    return sources.view(service(), source)


async def _found(raw: str) -> store.Source:
    found = await service().database.run(store.get_source, path_id(raw, *SOURCES))
    if found is None:
        raise no_such(raw, *SOURCES)
    return found


async def _upload_body() -> dict[str, Any]:
    """A multipart upload as a body: its form fields, the file's text as ``content``."""
    files, form = await request.files, await request.form
    check_upload(set(files) | set(form), len(files.getlist("file")))
    upload = files.getlist("file")[0]
    data = await trio.to_thread.run_sync(upload.read)
    return upload_body(form.to_dict(), decode_text(data, upload.mimetype_params.get("charset")))


@blueprint.get(PATH)
@operation(Reply(200, "The data sources", Integrations))
async def list_integrations() -> Integrations:
    """List the data sources, oldest first (credentials masked)"""
    found = await service().database.run(store.list_sources)
    return Integrations([_shown(source) for source in found])


@blueprint.post(PATH)
@operation(
    Reply(201, "Created (Location: its URL)", Integration),
    400,
    409,
    413,
    415,
    422,
    503,
    other_bodies=((JSON, body_schema(new=True)), ("multipart/form-data", UPLOAD_SCHEMA)),
)
async def create_integration() -> tuple[Integration, int, dict[str, str]]:
    """Create a data source: name, source_type and the kind's credential fields

    The credentials are stored encrypted with ADDON_ENCRYPTION_KEY (503 without it) and
    never shown. A CSV file may be sent as a multipart upload (field file). 409: the name
    is taken."""
    if request.mimetype == "multipart/form-data":
        try:
            created = await sources.create(service(), await _upload_body())
        except InvalidInput as refused:
            if refused.field != "content":
                raise
            raise InvalidInput("file", refused.message) from None  # the file's text
    else:
        created = await sources.create(service(), await json_body(required=True))
    return _shown(created), 201, {"Location": f"{PATH}/{created.id}"}


#: the kinds never change while the service runs: described once
DESCRIBED_KINDS = kinds_described()


@blueprint.get(f"{PATH}/kinds")  # a route of its own, never a source's id (ragio.http.routes)
@operation(Reply(200, "Every kind, with its fields", IntegrationKinds))
async def integration_kinds() -> IntegrationKinds:
    """The kinds of data source: each one's fields, the required ones, the secret ones

    For each source_type: its description, its fields (meaning, secret, default, whether
    a whole number, the longest value), the alternatives of its required fields and its
    user_field default: what a form needs to create one."""
    return DESCRIBED_KINDS


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The data source and its last sync", Integration), 404, **SOURCE_ID)
async def get_integration(id: str) -> Integration:  # noqa: A002 (the path's name)
    """One data source, with its sync's status and progress (credentials masked)"""
    return _shown(await _found(id))


@blueprint.patch(f"{PATH}/<id>")
@operation(
    Reply(200, "Updated", Integration),
    400,
    404,
    409,
    415,
    422,
    503,
    other_bodies=((JSON, body_schema(new=False)),),
    **SOURCE_ID,
)
async def patch_integration(id: str) -> Integration:  # noqa: A002 (the path's name)
    """Change a data source's name, user field, interval or credential fields

    A credential field sent replaces the stored one (null removes an optional one); the
    rest are kept. Only the source's own kind's fields are taken, and source_type cannot
    change (422 otherwise)."""
    source = await _found(id)
    return _shown(await sources.update(service(), source, await json_body(required=True)))


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Deleted, with its records and live actions"), 404, **SOURCE_ID)
async def delete_integration(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Delete a data source and every record its syncs stored

    Its live-data actions (/live-actions) are deleted with it."""
    if not await sources.delete(service(), path_id(id, *SOURCES)):
        raise no_such(id, *SOURCES)
    return "", 204


@blueprint.post(f"{PATH}/<id>/test")
@operation(
    Reply(200, "Tested: ok, with what answered or why not", TestResult), 404, 503, **SOURCE_ID
)
async def test_integration(id: str) -> TestResult:  # noqa: A002 (the path's name)
    """Test the connection: the source's smallest real request

    200 either way: ok true with what answered, or ok false with the source's reason
    (the request itself succeeded; the source did not). 503: the credentials cannot be
    decrypted with the configured keys."""
    ok, message = await sync.test_source(service(), await _found(id))
    return TestResult(ok, message)


@blueprint.post(f"{PATH}/<id>/sync")
@operation(
    Reply(202, "Syncing (GET the source for its progress)", Integration), 404, 409, 503, **SOURCE_ID
)
async def sync_integration(id: str) -> tuple[Integration, int, dict[str, str]]:  # noqa: A002
    """Start syncing the source's records in the background

    Answers at once with the source (status syncing); GET it to follow the progress and
    the outcome (succeeded, partial at INTEGRATIONS_SYNC_MAX_RECORDS, or failed with the
    source's reason). 409: a sync of it is already running, or waiting to be retried.

    The sync runs as a job (GET /jobs?kind=sync) in whichever process runs jobs; a sync
    that fails is retried after a backoff."""
    svc = service()
    source = await _found(id)
    waiting = await svc.database.run(jobs_store.unfinished_with_key, SYNC, str(source.id))
    if waiting is not None and waiting.status == "queued":  # a running one: the claim says
        raise ProblemError(
            409,
            f"data source {source.name!r} has a sync waiting to run (due "
            f"{waiting.run_after.isoformat(timespec='seconds')}); GET /jobs/{waiting.id} "
            "shows it",
        )
    claimed = await sync.queue_sync(svc, source)
    poke_worker()
    return _shown(claimed), 202, {"Location": f"{PATH}/{claimed.id}"}


@blueprint.get(f"{PATH}/<id>/records")
@operation(
    Reply(200, "A page of the user's records", Records), 404, 422, query=RecordsQuery, **SOURCE_ID
)
async def integration_records(id: str) -> Records:  # noqa: A002 (the path's name)
    """What the syncs stored for one user (user=), oldest first, paged with after="""
    query = read_query(RecordsQuery, request.args)  # user is required
    user = user_key({"user": query.user}, "user")
    if user is None:
        raise InvalidInput("user", "required: the user key (the value of the source's user_field)")
    source = await _found(id)
    found = await service().database.run(
        store.records_for, source.id, user, query.after, query.limit + 1
    )
    more = len(found) > query.limit
    found = found[: query.limit]
    return Records(user, found, found[-1].id if more else None)
