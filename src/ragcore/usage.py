"""Token budgets and the usage ledger (rule 14): what a call costs and whether it may run.

Before a model call, its tokens are *reserved* against the caps; after it, the
reservation is *settled* with what the provider reported (or an estimate of about 4
characters per token when it reported nothing), or *released* when the call failed.

How big the hold is (``fit_hold``): the prompt as it will be sent, estimated at about 4
characters a token and calibrated by the provider's own counts of recent calls
(``prompt_hold``), plus the output the call is allowed: MAX_OUTPUT_TOKENS, or less when
less is left under a cap, and the call is then sent with that smaller allowance, so the
provider cannot write past the cap. A call is allowed only when its whole hold fits under
every cap that applies, counting what was used and what is held by calls in flight; so
a cap is never passed, except by the difference between a prompt's calibrated estimate
and the provider's count of it. A small cap serves as many calls as fit: a call that does
not fit only because others are in flight is told to wait (``Capped.wait``) for them to
settle rather than refused. Days and months are UTC.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import attrs

from ragcore.effects import Effect
from ragcore.settings import Settings

CHARS_PER_TOKEN = 4
LIMIT_REACHED = "Usage limit reached: I cannot answer right now. Please try again later."
#: the least output an answer is sent with when a cap leaves less than MAX_OUTPUT_TOKENS:
#: a sentence or two; with less room than that, the cap is taken as reached
MIN_ANSWER_TOKENS = 32
#: calibration (``prompt_hold``): the provider's count of a prompt over our estimate, as
#: the largest of recent calls, times this margin; never below MIN_RATIO
CALIBRATION_MARGIN = 1.1
MIN_RATIO = 0.1


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
    #: the API key that asks (``ragcore.api.keys``; None: the owner's key, or a channel),
    #: whose calls are counted as its own, and its own cap a UTC day
    key_id: int | None = None
    key_daily: int = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> Caps:
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
            self.daily
            or self.monthly
            or self.key_daily
            or self.role_daily
            or self.role_monthly
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
    key_day: int = 0


@attrs.frozen
class Allowed:
    pass


@attrs.frozen
class Reservation:
    """A hold in the ledger; the call may write at most ``output_tokens``."""

    id: int
    output_tokens: int = 0


@attrs.frozen
class Capped:
    """A cap the call does not fit under. ``wait``: it would fit once the calls in flight
    settle (they hold more than they usually use), so waiting for them may help."""

    scope: str  # which cap: "daily", "monthly", "role daily", "role monthly", "key daily"
    cap: int
    used: int
    wait: bool = False


@attrs.frozen
class Room:
    """The tightest cap for a role: its scope, the cap, what it counts, and what is left."""

    scope: str
    cap: int
    used: int

    @property
    def left(self) -> int:
        return max(0, self.cap - self.used)


def tightest(totals: Totals, caps: Caps, role: str | None) -> Room | None:
    """The cap with the least left for ``role`` under ``totals``; None when none is set."""
    role_daily, role_monthly = caps.for_role(role)
    rooms = [
        Room(scope, cap, used)
        for scope, cap, used in (
            ("daily", caps.daily, totals.day),
            ("monthly", caps.monthly, totals.month),
            ("role daily", role_daily, totals.role_day),
            ("role monthly", role_monthly, totals.role_month),
            ("key daily", caps.key_daily, totals.key_day),
        )
        if cap
    ]
    return min(rooms, key=lambda room: room.left, default=None)


def check_budget(totals: Totals, caps: Caps, role: str | None, tokens: int = 1) -> Allowed | Capped:
    """Whether ``tokens`` more fit under every cap of ``role``, given ``totals``."""
    room = tightest(totals, caps, role)
    if room is not None and room.left < tokens:
        return Capped(room.scope, room.cap, room.used)
    return Allowed()


def prompt_hold(estimate: int, ratio: float | None) -> int:
    """Tokens to hold for a prompt we estimate at ``estimate``: as is without history, else
    calibrated by ``ratio``, the largest provider count over our estimate of recent calls,
    with a margin (a provider counting fewer tokens than 4 characters' worth, as most do
    for English, then lets a small cap serve more calls)."""
    if ratio is None:
        return estimate
    return math.ceil(round(estimate * max(ratio, MIN_RATIO) * CALIBRATION_MARGIN, 6))


def fit_hold(
    counted: Totals,
    settled: Totals,
    caps: Caps,
    role: str | None,
    prompt_tokens: int,
    max_output: int,
    min_output: int,
) -> int | Capped:
    """The output a call may be sent with, holding ``prompt_tokens`` for its prompt:
    ``max_output`` when it fits under every cap counting what calls in flight hold
    (``counted``), else what is left, down to ``min_output``; Capped below that, with
    ``wait`` when it would fit under what was used alone (``settled``)."""
    need = prompt_tokens + min_output
    room = tightest(counted, caps, role)
    if room is None or room.left >= prompt_tokens + max_output:
        return max_output
    if room.left >= need:
        return room.left - prompt_tokens
    used = tightest(settled, caps, role)
    return Capped(room.scope, room.cap, room.used, wait=used is not None and used.left >= need)


def is_count(value: Any) -> bool:
    """A token count as an API reports one: a whole number, not negative (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def reported_usage(prompt: Any, completion: Any) -> TokenUsage | None:
    """What a provider reported, when both are counts; None (so estimated) when not."""
    if not (is_count(prompt) and is_count(completion)):
        return None
    return TokenUsage(prompt, completion)


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


# The usage ledger's effects: the caps are checked, held and settled in one place.


@attrs.frozen
class CheckBudget(Effect[Allowed | Capped]):
    """Whether a call of at least ``tokens`` (its prompt's least size) could still fit under
    the caps by what was used so far, before any provider is asked (embedding included).

    Result: ``Allowed`` or ``Capped``.
    """

    runs_ahead = True

    role: str | None
    tokens: int
    caps: Caps


@attrs.frozen
class ReserveTokens(Effect[Reservation | Capped]):
    """Hold a call's tokens against the caps, atomically with every other reservation: its
    prompt, estimated at ``prompt_tokens`` (the runner calibrates it with the provider's
    counts of recent calls, ``prompt_hold``), and its output, as much of
    ``max_output_tokens`` as is left, not less than ``min_output_tokens`` (``fit_hold``); a
    call that would fit once calls in flight settle waits a little for them.

    Result: ``Reservation`` (with the output allowed) or ``Capped``.
    """

    runs_ahead = True

    role: str | None
    prompt_tokens: int
    caps: Caps
    max_output_tokens: int
    min_output_tokens: int


@attrs.frozen
class SettleTokens(Effect[None]):
    """Replace a reservation with what the call used, in the usage ledger. Result: None.
    It runs ahead of a tentative turn: what a call spent is spent, whatever the turn
    becomes."""

    gives_back = True
    runs_ahead = True

    reservation_id: int
    provider: str
    model: str
    usage: TokenUsage


@attrs.frozen
class ReleaseTokens(Effect[None]):
    """Drop a reservation whose call never ran or failed. Result: None."""

    gives_back = True
    runs_ahead = True

    reservation_id: int
