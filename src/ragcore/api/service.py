"""GET /health and GET /usage: the service's state and the tokens it spent."""

from __future__ import annotations

from typing import Any, Literal

import attrs


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
class Health:
    status: Literal["ok", "degraded"]
    version: str
    database: Database
    mode: str
    providers: Providers


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
