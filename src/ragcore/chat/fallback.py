"""Provider fallback (rule 6): which providers answer, in what order, and when to move on.

The primary answering provider is tried first, then each of
LLM_FALLBACK_PROVIDERS in order. A failure that another provider could avoid
(a rate limit, an outage, a timeout, a key the provider refuses, a reply that
breaks its API's promise) moves on to the next; a request the provider
*rejected* as malformed would be malformed for the next one too, so it stops
the chain. ``next_attempt`` walks the chain by these rules; ragio only calls
the provider it names and maps each SDK's exceptions into a ``FailureKind``;
nothing here knows an SDK, a clock or a socket.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ragcore.settings import Settings, answering_provider


class FailureKind(enum.Enum):
    RATE_LIMITED = "rate_limited"  # 429: too many requests, or a quota used up
    UNAVAILABLE = "unavailable"  # 5xx, overloaded, or the server could not be reached
    TIMEOUT = "timeout"  # no answer within PROVIDER_TIMEOUT_SECONDS
    BAD_KEY = "bad_key"  # the key is missing, wrong, revoked or not allowed this model
    REJECTED = "rejected"  # the provider refused the request itself (400, 404, 422…)
    #: a success (HTTP 200) that breaks the API's promise: a body that is not JSON, JSON
    #: without the reply (``choices``, ``candidates``…) or of the wrong types, no text at all
    BAD_REPLY = "bad_reply"


#: the failures another provider may not have: rule 6 moves on to the next one
MOVES_ON = frozenset(
    {
        FailureKind.RATE_LIMITED,
        FailureKind.UNAVAILABLE,
        FailureKind.TIMEOUT,
        FailureKind.BAD_KEY,
        FailureKind.BAD_REPLY,
    }
)

_EXPLAINED = {
    FailureKind.RATE_LIMITED: "rate limited",
    FailureKind.UNAVAILABLE: "unavailable",
    FailureKind.TIMEOUT: "timed out",
    FailureKind.BAD_KEY: "refused the API key",
    FailureKind.REJECTED: "rejected the request",
}


@attrs.frozen
class Attempt:
    """One provider that failed: its name, how, and the HTTP status when there was one.

    Deliberately no message: a provider's error text may quote the key it refused.
    ``reason`` says what was wrong with a bad reply ("a body that is not JSON", "JSON
    without choices", "no text"), in our own words, never the provider's.
    """

    provider: str
    failure: FailureKind
    status: int | None = None
    reason: str | None = None

    def describe(self) -> str:
        if self.failure is FailureKind.BAD_REPLY:  # "openai answered HTTP 200 with no text"
            status = f" HTTP {self.status}" if self.status is not None else ""
            what = self.reason or "a reply its API does not promise"
            return f"{self.provider} answered{status} with {what}"
        status = f" (HTTP {self.status})" if self.status is not None else ""
        return f"{self.provider} {_EXPLAINED[self.failure]}{status}"

    def as_dict(self) -> dict[str, Any]:
        """For an error body; ``reason`` only when there is one (a bad reply)."""
        shown = {"provider": self.provider, "failure": self.failure.value, "status": self.status}
        return shown if self.reason is None else {**shown, "reason": self.reason}


def provider_order(primary: str, fallbacks: Iterable[str]) -> tuple[str, ...]:
    """The primary, then the fallbacks in order; a name listed twice is tried once."""
    return tuple(dict.fromkeys((primary, *fallbacks)))


def answering_order(settings: Settings) -> tuple[str, ...]:
    """LLM_PROVIDER (or the one the keys select), then LLM_FALLBACK_PROVIDERS (blank: none)."""
    return provider_order(answering_provider(settings), settings.llm_fallback_providers)


def moves_on(failure: FailureKind) -> bool:
    """Whether the next provider should be tried after this failure."""
    return failure in MOVES_ON


@attrs.frozen
class TryProvider:
    """Ask the provider at ``index`` of the chain next."""

    index: int


@attrs.frozen
class GiveUp:
    """No provider answers: ``rejected`` when the last one refused the request itself (the
    next would too), otherwise every provider of the chain failed in a way that moves on."""

    attempts: tuple[Attempt, ...]
    rejected: bool


def next_attempt(chain_length: int, attempts: Sequence[Attempt]) -> TryProvider | GiveUp:
    """What to do after ``attempts`` (the failures so far, in chain order) on a chain of
    ``chain_length`` providers: try the next one while the last failure moves on, else stop."""
    if attempts and not moves_on(attempts[-1].failure):
        return GiveUp(tuple(attempts), rejected=True)
    if len(attempts) < chain_length:
        return TryProvider(len(attempts))
    return GiveUp(tuple(attempts), rejected=False)


def classify_status(status: int) -> FailureKind:
    """The failure an HTTP error status means, the same for every provider.

    408 and 504 are the server's own timeouts; 401, 402 and 403 say this key (or
    the account behind it) cannot be used; 429 is a rate or quota limit; any
    other 5xx (and Anthropic's 529 "overloaded") is an outage. The remaining
    4xx are the request's own fault.
    """
    if status in (408, 504):
        return FailureKind.TIMEOUT
    if status in (401, 402, 403):
        return FailureKind.BAD_KEY
    if status == 429:
        return FailureKind.RATE_LIMITED
    if status >= 500:
        return FailureKind.UNAVAILABLE
    return FailureKind.REJECTED


def failure_summary(attempts: Sequence[Attempt]) -> str:
    """One sentence for the operator: every provider tried and how it failed; no secrets."""
    if not attempts:
        return "no answering provider is configured"
    tried = "; ".join(attempt.describe() for attempt in attempts)
    if attempts[-1].failure is FailureKind.REJECTED:
        return f"the answering provider could not be used: {tried}"
    if len(attempts) == 1:
        return (
            f"no answering provider could answer: {tried}, and LLM_FALLBACK_PROVIDERS "
            "names no other provider to try"
        )
    return f"no answering provider could answer: {tried}"
