"""GET /health and GET /usage: the service's state and the tokens it spent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs

from ragcore.schema import Schemas, described
from ragcore.usage import Caps, Totals


@attrs.frozen
class Database:
    reachable: bool
    embedded: bool


@attrs.frozen
class Provider:
    name: str
    model: str | None


@attrs.frozen
class Embedder:
    name: str
    model: str | None
    dimensions: int


@attrs.frozen
class Providers:
    llm: Provider
    llm_fallbacks: list[str]
    embedding: Embedder


@attrs.frozen
class Graph:
    status: Annotated[
        Literal["off", "ok", "degraded"],
        described("off: not turned on (GRAPH_ENABLED); degraded: answers go on without it"),
    ]
    store: Annotated[str | None, described("postgres or neo4j; null when off")] = None
    reason: Annotated[str | None, described("why it is degraded, or how to turn it on")] = None


@attrs.frozen
class Health:
    status: Literal["ok", "degraded"]
    version: str
    database: Database
    mode: str
    providers: Providers
    graph: Graph = Graph("off")


@attrs.frozen
class HealthStatus:
    """What /health tells a caller without the API key when SERVICE_API_KEY is set:
    whether the service can answer, nothing about what it runs."""

    status: Literal["ok", "degraded"]


def health_answer(schemas: Schemas) -> dict[str, Any]:
    """/health's body: the whole Health, or the status alone (nothing else in it)."""
    return {
        "description": "The whole Health with the API key (or with no SERVICE_API_KEY "
        "set); without it, only the status",
        "oneOf": [schemas.ref(Health), schemas.ref(HealthStatus, closed=True)],
    }


@attrs.frozen
class Probe:
    """An orchestrator's probe answered: ``alive`` (the process runs) or ``ready`` (send
    it requests)."""

    status: Literal["alive", "ready"]


@attrs.frozen
class Spent:
    tokens: int
    cap: int | None


@attrs.frozen
class RoleCaps:
    daily: int | None
    monthly: int | None
    daily_overrides: dict[str, int]
    monthly_overrides: dict[str, int]


@attrs.frozen
class Usage:
    """Tokens spent by day, month, role and provider, and the budgets."""

    ledger: bool
    today: Spent
    this_month: Spent
    role_caps: RoleCaps
    by_day: list[dict[str, Any]]
    by_month: list[dict[str, Any]]
    this_month_by_role: list[dict[str, Any]]
    this_month_by_provider: list[dict[str, Any]]
    this_month_by_key: Annotated[
        list[dict[str, Any]],
        described(
            "by API key (key: its name; null: SERVICE_API_KEY and the channels no key asks "
            "on, such as Telegram and calls), as the other lists, with key_id"
        ),
    ] = attrs.field(factory=list)

    @classmethod
    def of(cls, ledger: bool, caps: Caps, totals: Totals, summary: dict[str, Any]) -> Usage:
        """What ``GET /usage`` shows."""
        return cls(ledger, *spending(caps, totals), **summary)


def spending(caps: Caps, totals: Totals) -> tuple[Spent, Spent, RoleCaps]:
    """Today's and this month's tokens against the global caps, and the per-role caps, as
    ``GET /usage`` and ``GET /status`` show them: a cap of 0 (unlimited) is shown as null."""
    role_caps = RoleCaps(
        caps.role_daily or None,
        caps.role_monthly or None,
        dict(caps.role_daily_overrides),
        dict(caps.role_monthly_overrides),
    )
    today = Spent(totals.day, caps.daily or None)
    return today, Spent(totals.month, caps.monthly or None), role_caps
