"""Token budgets and the usage ledger (rule 14): what a call costs and whether it may run.

Before a call, its tokens are *reserved* against the caps; after it, the
reservation is *settled* with what the provider reported (or an estimate of
about 4 characters per token when it reported nothing). A request is allowed
while the total (settled plus reserved) is under every cap that applies, so
concurrent requests overshoot a cap by at most what was already in flight
when it was reached. Days and months are UTC.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import attrs

CHARS_PER_TOKEN = 4
LIMIT_REACHED = "Usage limit reached: I cannot answer right now. Please try again later."
#: the grounding instructions and source labels, in tokens, on top of question and context
PROMPT_OVERHEAD_TOKENS = 500


def estimate_tokens(text: str) -> int:
    """About 4 characters per token, for providers that report no counts."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


@attrs.frozen
class TokenUsage:
    """Tokens of one LLM call; ``estimated`` when the provider reported none."""

    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        """Two calls made for one request (an answer and its check), recorded as one."""
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )


@attrs.frozen
class Caps:
    """Token caps; 0 means unlimited."""

    daily: int = 0
    monthly: int = 0
    role_daily: int = 0
    role_monthly: int = 0
    role_daily_overrides: tuple[tuple[str, int], ...] = ()
    role_monthly_overrides: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_settings(cls, settings: Any) -> Caps:
        return cls(
            daily=settings.budget_daily_tokens,
            monthly=settings.budget_monthly_tokens,
            role_daily=settings.budget_role_daily_tokens,
            role_monthly=settings.budget_role_monthly_tokens,
            role_daily_overrides=settings.budget_role_daily_overrides,
            role_monthly_overrides=settings.budget_role_monthly_overrides,
        )

    @property
    def any(self) -> bool:
        return bool(
            self.daily or self.monthly or self.role_daily or self.role_monthly
            or any(t for _, t in self.role_daily_overrides)
            or any(t for _, t in self.role_monthly_overrides)
        )

    def for_role(self, role: str | None) -> tuple[int, int]:
        """(daily, monthly) caps of ``role``: its override, else the per-role cap.

        A request without a role is held to the global caps only."""
        if role is None:
            return 0, 0
        daily = dict(self.role_daily_overrides).get(role, self.role_daily)
        monthly = dict(self.role_monthly_overrides).get(role, self.role_monthly)
        return daily, monthly


@attrs.frozen
class Totals:
    """Tokens counted so far (settled and reserved) in the current UTC day and month."""

    day: int = 0
    month: int = 0
    role_day: int = 0
    role_month: int = 0


@attrs.frozen
class Allowed:
    pass


@attrs.frozen
class Reservation:
    id: int


@attrs.frozen
class Capped:
    scope: str  # which cap: "daily", "monthly", "role daily", "role monthly"
    cap: int
    used: int


def check_budget(totals: Totals, caps: Caps, role: str | None) -> Allowed | Capped:
    role_daily, role_monthly = caps.for_role(role)
    for scope, cap, used in (
        ("daily", caps.daily, totals.day),
        ("monthly", caps.monthly, totals.month),
        ("role daily", role_daily, totals.role_day),
        ("role monthly", role_monthly, totals.role_month),
    ):
        if cap and used >= cap:
            return Capped(scope, cap, used)
    return Allowed()


def reservation_for(question: str, max_context_chars: int, max_output_tokens: int) -> int:
    """Tokens to hold before answering: the most the prompt and the output can take.

    Taken before anything else so a capped request calls no provider at all;
    settled afterwards with the real count. With trimming off, the context is
    counted at its default size (the hold is an estimate, not a limit).
    """
    context = max_context_chars or 12_000
    context_tokens = math.ceil(context / CHARS_PER_TOKEN)
    return estimate_tokens(question) + context_tokens + PROMPT_OVERHEAD_TOKENS + max_output_tokens


def measured_usage(reported: TokenUsage | None, prompt_text: str, answer_text: str) -> TokenUsage:
    """The provider's counts, else an estimate from the texts (about 4 characters per token)."""
    if reported is not None:
        return reported
    return TokenUsage(estimate_tokens(prompt_text), estimate_tokens(answer_text), estimated=True)


def day_and_month(now: datetime) -> tuple[datetime, datetime]:
    """Starts of the UTC day and month holding ``now`` (which must be timezone-aware)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    utc = now.astimezone(UTC)
    day = utc.replace(hour=0, minute=0, second=0, microsecond=0)
    return day, day.replace(day=1)
