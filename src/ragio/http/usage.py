"""GET /usage: tokens spent, by day, month, role and provider, against the budgets."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore.api.converter import converter
from ragcore.api.operations import Reply, operation
from ragcore.api.service import RoleCaps, Spent, Usage
from ragcore.usage import Caps
from ragio.http.context import service
from ragio.usage import ledger

blueprint = Blueprint("usage", __name__)


@blueprint.get("/usage")
@operation(Reply(200, "The usage summary", Usage))
async def usage() -> dict[str, Any]:
    """Tokens spent by day, month, role and provider, and the budgets"""
    svc = service()
    now = svc.clock.now()
    summary = await svc.database.run(ledger.summary, now)
    totals, _ = await svc.database.run(ledger.totals, None, now)
    caps = Caps.from_settings(svc.settings)
    role_caps = RoleCaps(
        caps.role_daily or None,
        caps.role_monthly or None,
        dict(caps.role_daily_overrides),
        dict(caps.role_monthly_overrides),
    )
    shown = Usage(
        svc.settings.usage_ledger,
        Spent(totals.day, caps.daily or None),
        Spent(totals.month, caps.monthly or None),
        role_caps,
        **summary,
    )
    return converter.unstructure(shown)
