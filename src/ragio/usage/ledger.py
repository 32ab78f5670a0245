"""SQL for the usage ledger: check, reserve, settle, release, summarise.

Reservations are taken under a transaction-level advisory lock, so the totals a
request is checked against include every reservation made before it. A
reservation left behind by a crashed process stops counting after
STALE_RESERVATION. How big a hold is, is ragcore.usage's rule; the calibration it
needs (how the provider counted our recent prompts) is read here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from ragcore.usage import (
    Allowed,
    Capped,
    CheckBudget,
    Reservation,
    ReserveTokens,
    TokenUsage,
    Totals,
    check_budget,
    day_and_month,
    fit_hold,
    prompt_hold,
)
from ragio.keys import usage_by_key

BUDGET_LOCK = 0x72616762756467  # "ragbudg"
STALE_RESERVATION = timedelta(minutes=10)
CALIBRATION_CALLS = 50  # recent settled calls the prompt calibration looks at

# Tokens a row counts for: what it used once settled, what it holds while reserved.
_COUNTED = """CASE WHEN state = 'settled' THEN prompt_tokens + completion_tokens
                   ELSE reserved_tokens END"""
_LIVE = "(state = 'settled' OR at > %(stale)s)"
# Tokens a row counts for once only what was used counts: reservations count for nothing.
_USED = "CASE WHEN state = 'settled' THEN prompt_tokens + completion_tokens ELSE 0 END"


def totals(
    conn: psycopg.Connection, role: str | None, now: datetime, key_id: int | None = None
) -> tuple[Totals, Totals]:
    """Tokens counted this UTC day and month, globally, for ``role`` and for the API key
    ``key_id`` (today), in one scan: what was used and what live reservations hold, then
    what was used alone."""
    day, month = day_and_month(now)
    sums = ", ".join(
        f"coalesce(sum({counted}) FILTER (WHERE {where}), 0)"
        for counted in (_COUNTED, _USED)
        for where in (
            "at >= %(day)s",
            "true",
            "at >= %(day)s AND role = %(role)s",
            "role = %(role)s",
            "at >= %(day)s AND api_key_id = %(key)s",
        )
    )
    row = conn.execute(
        f"SELECT {sums} FROM usage_records WHERE at >= %(month)s AND {_LIVE}",
        {"day": day, "month": month, "role": role, "key": key_id, "stale": now - STALE_RESERVATION},
    ).fetchone()
    values = [int(v) for v in row]
    return Totals(*values[:5]), Totals(*values[5:])


def calibration(conn: psycopg.Connection) -> float | None:
    """The largest ratio of a provider's count of a prompt to our estimate of it, over the
    last CALIBRATION_CALLS settled calls it reported counts for; None without any."""
    row = conn.execute(
        """SELECT max(prompt_tokens::float8 / estimated_prompt_tokens) FROM (
             SELECT prompt_tokens, estimated_prompt_tokens FROM usage_records
             WHERE state = 'settled' AND NOT estimated
               AND estimated_prompt_tokens > 0 AND prompt_tokens > 0
             ORDER BY id DESC LIMIT %s) AS recent""",
        (CALIBRATION_CALLS,),
    ).fetchone()
    return None if row[0] is None else float(row[0])


def check(conn: psycopg.Connection, effect: CheckBudget, now: datetime) -> Allowed | Capped:
    """``CheckBudget``: does a call of the effect's least size fit under what was used?"""
    if not effect.caps.any:
        return Allowed()
    least = prompt_hold(effect.tokens, calibration(conn))
    _, settled = totals(conn, effect.role, now, effect.caps.key_id)
    return check_budget(settled, effect.caps, effect.role, least)


def reserve(conn: psycopg.Connection, effect: ReserveTokens, now: datetime) -> Reservation | Capped:
    """``ReserveTokens``: the hold ``ragcore.usage.fit_hold`` allows, inserted under the
    budget lock so concurrent reservations see each other."""
    role, caps = effect.role, effect.caps
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (BUDGET_LOCK,))
        prompt, output = effect.prompt_tokens, effect.max_output_tokens
        if caps.any:
            prompt = prompt_hold(effect.prompt_tokens, calibration(conn))
            counted, settled = totals(conn, role, now, caps.key_id)
            fitted = fit_hold(
                counted,
                settled,
                caps,
                role,
                prompt,
                effect.max_output_tokens,
                effect.min_output_tokens,
            )
            if isinstance(fitted, Capped):
                return fitted
            output = fitted
        row = conn.execute(
            """INSERT INTO usage_records
                 (at, role, state, reserved_tokens, estimated_prompt_tokens, api_key_id)
               VALUES (%s, %s, 'reserved', %s, %s, %s) RETURNING id""",
            (now, role, prompt + output, effect.prompt_tokens, caps.key_id),
        ).fetchone()
    return Reservation(row[0], output)


def settle(
    conn: psycopg.Connection, reservation_id: int, provider: str, model: str, usage: TokenUsage
) -> None:
    conn.execute(
        """UPDATE usage_records
           SET state = 'settled', provider = %s, model = %s, prompt_tokens = %s,
               completion_tokens = %s, estimated = %s
           WHERE id = %s""",
        (
            provider,
            model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.estimated,
            reservation_id,
        ),
    )


def release(conn: psycopg.Connection, reservation_id: int) -> None:
    conn.execute(
        "DELETE FROM usage_records WHERE id = %s AND state = 'reserved'", (reservation_id,)
    )


def summary(conn: psycopg.Connection, now: datetime) -> dict[str, Any]:
    """Settled tokens by UTC day (last 31), by month (last 12), and by role and provider."""
    day, month = day_and_month(now)

    def grouped(name: str, key: str, since: datetime, shown: Any = None) -> list[dict[str, Any]]:
        rows = conn.execute(
            f"""SELECT {key} AS k, count(*), sum(prompt_tokens), sum(completion_tokens),
                       bool_or(estimated)
                FROM usage_records WHERE state = 'settled' AND at >= %s
                GROUP BY k ORDER BY k""",
            (since,),
        ).fetchall()
        return [
            {
                name: shown(k) if shown else k,
                "calls": calls,
                "prompt_tokens": int(prompt),
                "completion_tokens": int(completion),
                "total_tokens": int(prompt) + int(completion),
                "includes_estimates": estimated,
            }
            for k, calls, prompt, completion, estimated in rows
        ]

    utc_day = "date_trunc('day', at AT TIME ZONE 'UTC')"
    utc_month = "date_trunc('month', at AT TIME ZONE 'UTC')"
    year_ago = (month - timedelta(days=335)).replace(day=1)
    return {
        "by_day": grouped("day", utc_day, day - timedelta(days=30), lambda d: d.date().isoformat()),
        "by_month": grouped("month", utc_month, year_ago, lambda d: d.strftime("%Y-%m")),
        "this_month_by_role": grouped("role", "role", month),
        "this_month_by_provider": grouped("provider", "provider", month),
        "this_month_by_key": usage_by_key(conn, month),
    }
