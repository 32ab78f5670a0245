"""The handler of ``RunLiveQuery`` (``ragcore.live.pipeline``): a live action's checked
template run on its data source, its values bound, never formatted into query text.

Each kind of source, through its connector:

- mysql, postgresql: the statement with the values as the driver's parameters; a read in
  a read-only transaction with at most ``MAX_ROWS`` rows, a write committed, or, for the
  owner's ``dry_run``, rolled back (the rows it would change are still counted). The
  server's statement timeout bounds it. It runs on one of the source's kept connections
  when there is one (``service.source_connections``: a few per source, dropped when the
  source is edited or deleted), else on a new one, kept afterwards.
- mongodb: a ``find`` with the bound filter (``bind_filter``: each value a BSON string,
  never parsed as an operator) on the configured collection, ``MAX_ROWS`` at most, the
  server's ``maxTimeMS`` on it; documents JSON-shaped (``_id`` as its hex text).
- rest_api: ``GET`` of the bound path and query (``rest_target``: each value
  URL-encoded) on the source's base URL, its origin only, with its auth header and no
  redirect followed; a list body is the rows, an object its ``records_key`` list or
  itself as one row; a non-2xx answer is a failure with its status.
- the SaaS kinds and csv: the vendor's own search for "field equals value" where it has
  one (HubSpot's CRM search, Stripe's Search API, a SOQL query on Salesforce, Shopify's
  search syntax), the rows filtered here for a Google sheet or a CSV file.

The other kinds are reads only: a dry run of them is the read itself. The whole query,
connecting included, gets ``LIVE_QUERY_TIMEOUT_SECONDS`` (a customer is waiting); each
request within it also gets its own timeout (``INTEGRATIONS_TIMEOUT_SECONDS``, or the
live limit when that is shorter). The run's duration is measured on ``service.clock``.
Every failure is a ``LiveFailure`` with the source's reason (credentials masked), never
an exception: the answer goes on without live data.
"""

from __future__ import annotations

import logging
from typing import Protocol, cast

import attrs
import trio

from ragcore.live.pipeline import LiveFailure, LiveRows, RunLiveQuery
from ragcore.live.templates import (
    SEARCH_KINDS,
    MongoTemplate,
    RestTemplate,
    SearchTemplate,
    SqlTemplate,
    bind_filter,
    rest_target,
)
from ragio.integrations import store
from ragio.integrations.connectors import connector_for
from ragio.integrations.connectors.base import Record, SourceFailed
from ragio.integrations.connectors.databases import MySQLTable, PostgreSQLTable
from ragio.integrations.connectors.mongodb import MongoCollection
from ragio.integrations.connectors.rest import RestApi
from ragio.integrations.credentials import CredentialsUnreadable
from ragio.integrations.reach import connector_reach, http_reach
from ragio.integrations.sync import credentials_of
from ragio.service import HandlerTable, Service

log = logging.getLogger(__name__)
MAX_ROWS = 50  # the rows a read hands over (the prompt shows fewer: live_source_text)
SQL_TABLES = {"mysql": MySQLTable, "postgresql": PostgreSQLTable}


class Searchable(Protocol):
    """A connector of a search kind (``SEARCH_KINDS``): each has ``search``."""

    async def search(self, field: str, value: str, limit: int) -> list[Record]: ...


async def run_live_query(effect: RunLiveQuery, service: Service) -> LiveRows | LiveFailure:
    started = service.clock.now()
    try:
        outcome = await _outcome(effect, service)
    except Exception as error:  # a bug or a driver's surprise: its kind only (values in it)
        log.error("live action %s failed unexpectedly: %s", effect.action_id, type(error).__name__)
        raise
    elapsed = service.clock.now() - started
    return attrs.evolve(outcome, duration_ms=max(0, round(elapsed.total_seconds() * 1000)))


async def _outcome(effect: RunLiveQuery, service: Service) -> LiveRows | LiveFailure:
    limit = service.settings.live_query_timeout_seconds
    with trio.move_on_after(limit):
        try:
            return await _run(effect, service, limit)
        except SourceFailed as failed:
            log.info("live action %s: %s", effect.action_id, failed.reason)
            return LiveFailure(failed.reason)
    log.info("live action %s: no answer within %g seconds", effect.action_id, limit)
    return LiveFailure(f"no answer within {limit:g} seconds")


async def _run(effect: RunLiveQuery, service: Service, limit: float) -> LiveRows | LiveFailure:
    source = await service.database.run(store.get_source, effect.source_id)
    if source is None:
        return LiveFailure(f"data source {effect.source_id} no longer exists")
    kind, query = source.source_type, effect.query
    try:
        credentials = credentials_of(service, source)
    except CredentialsUnreadable as unreadable:
        return LiveFailure(unreadable.detail)
    values = dict(effect.values)
    timeout = min(service.settings.integrations_timeout_seconds, limit)
    if kind in SQL_TABLES and isinstance(query, SqlTemplate):
        within = await connector_reach(service, timeout, live=True)  # reached by its driver
        kept = service.source_connections.lease(source.id, source.updated_at)
        rows, affected = await SQL_TABLES[kind](credentials, within).run_statement(
            query.text,
            values,
            writes=query.writes,
            max_rows=MAX_ROWS,
            dry_run=effect.dry_run,
            kept=kept,
        )
        return LiveRows(tuple(rows), affected)
    if kind == "mongodb" and isinstance(query, MongoTemplate):
        collection = MongoCollection(
            credentials, await connector_reach(service, timeout, live=True)
        )
        kept = service.source_connections.lease(source.id, source.updated_at)
        found = await collection.find(bind_filter(query, values), MAX_ROWS, kept=kept)
        return LiveRows(tuple(found))
    if kind == "rest_api" and isinstance(query, RestTemplate):
        async with http_reach(service, timeout, live=True) as within:
            api = connector_for(kind, credentials, within)
            assert isinstance(api, RestApi)
            return LiveRows(tuple(await api.get(rest_target(query, values), MAX_ROWS)))
    if kind in SEARCH_KINDS and isinstance(query, SearchTemplate):
        async with http_reach(service, timeout, live=True) as within:
            searcher = cast(Searchable, connector_for(kind, credentials, within))
            found = await searcher.search(query.field, values[query.param], MAX_ROWS)
            return LiveRows(tuple(found))
    return LiveFailure(f"the action's template is not one for a {kind} source")


HANDLERS: HandlerTable = {RunLiveQuery: run_live_query}
