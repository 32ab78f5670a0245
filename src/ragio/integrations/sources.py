"""Creating, editing and showing a data source: its credentials encrypted before they
are stored, never shown (masked), and an edit that keeps what it does not name.

The rules of a body are ``ragcore.integrations.kinds``'s; a host the credentials spell
literally (an address, a localhost or metadata name, a socket path) is judged by the
address rules (``ragcore.integrations.addresses.save_refusal``): 422 naming the field,
nothing stored; every use judges it again. The routes (``ragio.http.integrations``) only
read the request and answer."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import trio

from ragcore.api.integrations import Integration, shown
from ragcore.api.problems import ProblemError
from ragcore.errors import InvalidInput
from ragcore.integrations.addresses import save_refusal
from ragcore.integrations.kinds import KINDS, check_new, check_patch
from ragio.integrations import store
from ragio.integrations.credentials import CredentialsUnreadable, Keys
from ragio.integrations.reach import connector_reach
from ragio.service import Service

log = logging.getLogger(__name__)


def view(service: Service, source: store.Source) -> Integration:
    """The source as the API shows it: which credential fields are set, secrets masked
    (every field masked when no configured key opens them)."""
    try:
        credentials: dict[str, str] | None = Keys.of(service.settings).decrypt(
            source.token, source.name
        )
    except CredentialsUnreadable:
        credentials = None
    return Integration(
        source.id,
        source.name,
        source.source_type,
        shown(KINDS[source.source_type], source.fields, credentials),
        source.user_field,
        source.sync_interval_minutes,
        source.sync,
        source.created_at,
        source.updated_at,
    )


async def create(service: Service, body: Mapping[str, Any]) -> store.Source:
    """A new source from a checked body, its credentials encrypted (503 without a key);
    409 when its name is taken."""
    new = check_new(body)
    await check_addresses(service, new.source_type, new.credentials)
    token = Keys.of(service.settings).encrypt(new.credentials)
    try:
        created = await service.database.run(
            store.create_source,
            new.name,
            new.source_type,
            token,
            sorted(new.credentials),
            new.user_field,
            new.sync_interval_minutes,
        )
    except store.NameTaken as taken:
        raise _taken(taken.name) from None
    log.info("data source %r (%s) created", created.name, created.source_type)
    return created


async def update(service: Service, source: store.Source, body: Mapping[str, Any]) -> store.Source:
    """``source`` with the fields ``body`` names changed; a credential field sent replaces
    the stored one (null removes an optional one). Credentials no configured key opens
    are kept as they are when the body names none of them (503 when it does)."""
    keys = Keys.of(service.settings)
    kind = KINDS[source.source_type]
    try:
        stored: dict[str, str] | None = keys.decrypt(source.token, source.name)
    except CredentialsUnreadable:
        if any(field.name in body for field in kind.fields):
            raise
        stored = None
    patch = check_patch(kind, body, stored if stored is not None else _set(source.fields))
    token, fields = source.token, source.fields
    if stored is not None and patch.credentials:
        credentials = patch.credentials_from(stored)
        await check_addresses(service, source.source_type, credentials)
        token, fields = keys.encrypt(credentials), sorted(credentials)
    try:
        saved = await service.database.run(
            store.update_source,
            source.id,
            patch.name if patch.name is not None else source.name,
            token,
            fields,
            patch.user_field if patch.user_field is not None else source.user_field,
            patch.interval_from(source.sync_interval_minutes),
            source.token,
        )
    except store.NameTaken as taken:
        raise _taken(taken.name) from None
    if saved is None:
        raise ProblemError(409, f"data source {source.name!r} changed meanwhile; read it again")
    service.live.changed(source_id=source.id)  # its cached live results were read before
    await forget_connections(service, source.id)
    return saved


async def delete(service: Service, source_id: int) -> bool:
    """Delete a source, its records and its live actions (ON DELETE CASCADE); False when
    there was none. Its cached live results go, the live actions are read again, and
    the connections kept to it are closed."""
    deleted = await service.database.run(store.delete_source, source_id)
    if deleted:
        service.live.changed(source_id=source_id)
        await forget_connections(service, source_id)
    return deleted


async def forget_connections(service: Service, source_id: int) -> None:
    """Close the connections kept to the source for live queries (``ragio.db.
    source_connections``): its next query connects with what is stored now."""
    with trio.CancelScope(shield=True):  # the edit is saved: its connections go with it
        await trio.to_thread.run_sync(service.source_connections.drop, source_id)


async def check_addresses(service: Service, kind: str, credentials: Mapping[str, str]) -> None:
    """InvalidInput naming the field when a host the credentials spell literally is one
    a data source must not reach (``save_refusal``)."""
    within = await connector_reach(service, service.settings.integrations_timeout_seconds)
    refused = save_refusal(
        kind, credentials, within.targets, within.own_database, within.allow_unix_sockets
    )
    if refused is not None:
        raise InvalidInput(*refused)


def _set(fields: list[str]) -> dict[str, str]:
    """Stand-ins for credentials that cannot be read: which fields are set."""
    return {name: "set" for name in fields}


def _taken(name: str) -> ProblemError:
    return ProblemError(409, f"a data source named {name!r} exists; choose another name")
