"""The handler of ``RunLiveQuery`` (``ragcore.live.pipeline``): a live action's checked
template run on its data source, its values bound as the driver's parameters.

The SQL kinds run here: a read in a read-only transaction with at most ``MAX_ROWS`` rows,
a write committed; the server's statement timeout and ``INTEGRATIONS_TIMEOUT_SECONDS``
(twice, for connecting and the statement) bound it. Every failure is a ``LiveFailure``
with the source's reason, never an exception: the answer goes on without live data.
Live queries on the other kinds are not built yet and say so.
"""

from __future__ import annotations

import logging

import trio

from ragcore.live.pipeline import LiveFailure, LiveRows, RunLiveQuery
from ragcore.live.templates import SqlTemplate
from ragio.integrations import store
from ragio.integrations.connectors.base import Reach, SourceFailed
from ragio.integrations.connectors.databases import MySQLTable, PostgreSQLTable
from ragio.integrations.credentials import CredentialsUnreadable
from ragio.integrations.sync import credentials_of
from ragio.service import HandlerTable, Service

log = logging.getLogger(__name__)
MAX_ROWS = 50  # the rows a read hands over (the prompt shows fewer: live_source_text)
SQL_TABLES = {"mysql": MySQLTable, "postgresql": PostgreSQLTable}


async def run_live_query(effect: RunLiveQuery, service: Service) -> LiveRows | LiveFailure:
    source = await service.database.run(store.get_source, effect.source_id)
    if source is None:
        return LiveFailure(f"data source {effect.source_id} no longer exists")
    table = SQL_TABLES.get(source.source_type)
    if table is None or not isinstance(effect.query, SqlTemplate):
        return LiveFailure(f"live queries on {source.source_type} sources are not built yet")
    try:
        credentials = credentials_of(service, source)
    except CredentialsUnreadable as unreadable:
        return LiveFailure(unreadable.detail)
    settings = service.settings
    limit = 2 * settings.integrations_timeout_seconds
    # no HTTP client: a database is reached by its driver (a customer is waiting)
    within = Reach(
        settings.integrations_timeout_seconds,
        settings.integrations_allow_http_loopback,
        clock=service.clock,
    )
    try:
        with trio.move_on_after(limit):
            rows, affected = await table(credentials, within).run_statement(
                effect.query.text,
                dict(effect.values),
                writes=effect.query.writes,
                max_rows=MAX_ROWS,
            )
            return LiveRows(tuple(rows), affected)
    except SourceFailed as failed:
        log.info("live action %s: %s", effect.action_id, failed.reason)
        return LiveFailure(failed.reason)
    return LiveFailure(f"no answer within {limit:g} seconds")


HANDLERS: HandlerTable = {RunLiveQuery: run_live_query}
