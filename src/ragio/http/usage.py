"""GET /usage: tokens spent, by day, month, role and provider, against the budgets."""

from __future__ import annotations

from quart import Blueprint

from ragcore.api.operations import Reply, operation
from ragcore.api.service import Usage
from ragcore.usage import Caps
from ragio.http.context import service
from ragio.usage import ledger

blueprint = Blueprint("usage", __name__)


@blueprint.get("/usage")
@operation(Reply(200, "The usage summary", Usage))
async def usage() -> Usage:
    """Tokens spent by day, month, role and provider, and the budgets"""
    svc = service()
    now = svc.clock.now()
    summary = await svc.database.run(ledger.summary, now)
    totals, _ = await svc.database.run(ledger.totals, None, now)
    return Usage.of(svc.settings.usage_ledger, Caps.from_settings(svc.settings), totals, summary)
