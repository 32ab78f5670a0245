"""The handlers of live data's part in an answer (``ragcore.live.answers``): the enabled
actions and the results cache the service holds, the asker's pending question, and the
execution log with the values as an HMAC (``ragcore.live.log.values_hash``).

The actions are read from the database at most every 30 seconds (``Held``), and at once
after an edit here; a service with no action reads nothing else, so a question costs
no extra query when the owner has configured none.
"""

from __future__ import annotations

import logging

import psycopg

from ragcore.employees.learning import asker_hash
from ragcore.live.answers import LiveContext, LoadLive, RecordLive
from ragcore.live.log import values_hash
from ragio.live import store
from ragio.live.keys import live_hash_key
from ragio.service import HandlerTable, Service

log = logging.getLogger(__name__)


async def load_live(effect: LoadLive, service: Service) -> LiveContext:
    now = service.clock.now()
    held = service.live
    actions = held.current_actions(now)
    if actions is None:
        actions = await service.database.run(store.enabled_actions)
        held.read(actions, now)
    on_channel = tuple(a for a in actions if not a.channels or effect.channel in a.channels)
    pending = None
    if on_channel and effect.asker is not None:
        asker = asker_hash(effect.asker)
        pending = await service.database.run(store.take_pending, effect.channel, asker, now)
    return LiveContext(on_channel, held.results, now, pending)


async def record_live(effect: RecordLive, service: Service) -> None:
    """Log the run, and keep the question asked; a failure here is logged, never the
    customer's problem (the answer is already decided)."""
    run = effect.run
    hashed = values_hash(run.values, live_hash_key(service.settings))

    def write(conn: psycopg.Connection) -> None:
        store.log_run(conn, run, effect.channel, hashed, service.clock.now())
        if effect.pending is not None and effect.asker is not None:
            assert effect.expires_at is not None
            store.keep_pending(
                conn, effect.channel, asker_hash(effect.asker), effect.pending, service.clock.now(),
                effect.expires_at,
            )  # fmt: skip

    try:
        await service.database.run(write)
    except psycopg.Error as error:
        log.warning("live action %s: the run could not be logged: %s", run.action_id, error)


HANDLERS: HandlerTable = {LoadLive: load_live, RecordLive: record_live}
