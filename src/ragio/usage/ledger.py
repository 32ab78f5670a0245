"""SQL for the usage ledger: reserve, settle, release, summarise.

Reservations are taken under a transaction-level advisory lock, so the totals a
request is checked against include every reservation made before it. A
reservation left behind by a crashed process stops counting after
STALE_RESERVATION.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from ragcore.usage import Capped, Caps, Reservation, TokenUsage, Totals, check_budget, day_and_month

BUDGET_LOCK = 0x72616762756467  # "ragbudg"
STALE_RESERVATION = timedelta(minutes=10)

# Tokens a row counts for: what it used once settled, what it holds while reserved.
_COUNTED = """CASE WHEN state = 'settled' THEN prompt_tokens + completion_tokens
                   ELSE reserved_tokens END"""
_LIVE = "(state = 'settled' OR at > %(stale)s)"


def totals(conn: psycopg.Connection, role: str | None, now: datetime) -> Totals:
    day, month = day_and_month(now)
    row = conn.execute(
        f"""SELECT
              coalesce(sum({_COUNTED}) FILTER (WHERE at >= %(day)s), 0),
              coalesce(sum({_COUNTED}), 0),
              coalesce(sum({_COUNTED}) FILTER (WHERE at >= %(day)s AND role = %(role)s), 0),
              coalesce(sum({_COUNTED}) FILTER (WHERE role = %(role)s), 0)
            FROM usage_records WHERE at >= %(month)s AND {_LIVE}""",
        {"day": day, "month": month, "role": role, "stale": now - STALE_RESERVATION},
    ).fetchone()
    return Totals(*(int(v) for v in row))


def reserve(
    conn: psycopg.Connection, role: str | None, tokens: int, caps: Caps, now: datetime
) -> Reservation | Capped:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (BUDGET_LOCK,))
        decision = check_budget(totals(conn, role, now), caps, role)
        if isinstance(decision, Capped):
            return decision
        row = conn.execute(
            """INSERT INTO usage_records (at, role, state, reserved_tokens)
               VALUES (%s, %s, 'reserved', %s) RETURNING id""",
            (now, role, tokens),
        ).fetchone()
    return Reservation(row[0])


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
    }
