"""GET /status: what is set up and working, for the owner (the console's Status page).

This route only gathers the facts: the settings, the providers the service runs (as
/health shows them) and their last calls by this process, or by any process of its
``ragchat serve`` (``ragio.providers.last_calls``), the knowledge graph's state, and what
the database holds, read in one go. The items, their states and next steps are
``ragcore.api.status``'s rules. Nothing is asked of a platform or a provider: the route
makes no call out.
"""

from __future__ import annotations

import logging
from datetime import datetime

import psycopg
import trio
from quart import Blueprint

from ragcore.api.operations import Reply, operation
from ragcore.api.service import Database
from ragcore.api.status import Status, StatusCounts, StatusFacts, status
from ragio.channels.updates import RETENTION
from ragio.http.context import service
from ragio.http.health import answering_chain, embedder, graph
from ragio.providers.last_calls import LAST_CALLS
from ragio.service import Service
from ragio.usage import ledger

blueprint = Blueprint("status", __name__)
log = logging.getLogger(__name__)
#: how long the counts may take once the database has answered its ping
DATABASE_WAIT_SECONDS = 3.0


@blueprint.get("/status")
@operation(Reply(200, "Each part's state, in plain words, with the next step", Status))
async def get_status() -> Status:
    """What is set up and working, each part with its next step

    Answering (the providers and their last calls by the serve that answers), the
    knowledge base, the channels, the knowledge graph, the budgets, the data sources and
    websites, and the database: each with a state (ok, missing, failing or off), a
    summary and the next step (null when there is none). Makes no call to a provider or
    a platform, and shows no setting's value, only the names of the settings to set."""
    svc = service()
    now = svc.clock.now()
    reachable = await svc.database.reachable()
    facts = StatusFacts(
        settings=svc.settings,
        now=now,
        chain=answering_chain(svc),
        embedder=embedder(svc),
        database=Database(reachable, svc.database.embedded),
        graph=graph(svc),
        calls=LAST_CALLS.seen(now),
        counts=await _counts(svc, now) if reachable else None,
        messages_kept_days=RETENTION.days,
    )
    return status(facts)


async def _counts(svc: Service, now: datetime) -> StatusCounts | None:
    """What the database holds, or None when it did not say in time."""
    with trio.move_on_after(DATABASE_WAIT_SECONDS):
        try:
            return await svc.database.run(_count, now)
        except (psycopg.Error, OSError) as error:
            log.warning("GET /status could not read the database: %s", error)
            return None
    return None


def _count(conn: psycopg.Connection, now: datetime) -> StatusCounts:
    """The counts in one statement, the channels' last messages, and the tokens spent as
    GET /usage counts them (``ragio.usage.ledger.totals``)."""
    row = conn.execute(
        """SELECT (SELECT count(*) FROM documents),
                  (SELECT count(*) FROM chunks),
                  (SELECT count(*) FROM widget_sites),
                  (SELECT count(*) FROM widget_sites WHERE enabled),
                  (SELECT count(*) FROM integrations),
                  (SELECT array_agg(name ORDER BY name) FROM integrations
                    WHERE sync_status = 'failed'),
                  (SELECT count(*) FROM websites),
                  (SELECT array_agg(name ORDER BY name) FROM websites
                    WHERE coalesce((last_crawl -> 'pages' ->> 'failed')::integer, 0) > 0),
                  (SELECT max(started_at) FROM voice_calls)"""
    ).fetchone()
    assert row is not None  # one row, always
    last_messages = conn.execute(
        "SELECT channel, max(received_at) FROM channel_updates GROUP BY channel"
    ).fetchall()
    totals, _ = ledger.totals(conn, None, now)
    return StatusCounts(
        documents=row[0],
        chunks=row[1],
        widget_sites=row[2],
        enabled_widget_sites=row[3],
        data_sources=row[4],
        failing_data_sources=tuple(row[5] or ()),
        websites=row[6],
        failing_websites=tuple(row[7] or ()),
        last_call_at=row[8],
        last_messages=dict(last_messages),
        totals=totals,
    )
