"""GET /usage: tokens spent, by day, month, role and provider, against the budgets."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore.usage import Caps
from ragio.http.context import service
from ragio.usage import ledger

blueprint = Blueprint("usage", __name__)


@blueprint.get("/usage")
async def usage() -> dict[str, Any]:
    svc = service()
    now = svc.clock.now()
    summary = await svc.database.run(ledger.summary, now)
    totals, _ = await svc.database.run(ledger.totals, None, now)
    caps = Caps.from_settings(svc.settings)
    return {
        "ledger": svc.settings.usage_ledger,
        "today": {"tokens": totals.day, "cap": caps.daily or None},
        "this_month": {"tokens": totals.month, "cap": caps.monthly or None},
        "role_caps": {
            "daily": caps.role_daily or None,
            "monthly": caps.role_monthly or None,
            "daily_overrides": dict(caps.role_daily_overrides),
            "monthly_overrides": dict(caps.role_monthly_overrides),
        },
        **summary,
    }
