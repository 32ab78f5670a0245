"""How a provider failed: each SDK's exceptions mapped into ragcore's failure kinds, and
the errors the API reports them with (see ragio.http.problems)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import trio

from ragcore.chat.fallback import Attempt, FailureKind, classify_status, failure_summary


class AnswerFailed(RuntimeError):
    """No answer from the chain; ``attempts`` says which providers failed and how (no secrets).

    ``status`` is the HTTP status the API answers with.
    """

    status = 502
    title = "The answering provider could not be used"

    def __init__(self, attempts: Sequence[Attempt]):
        self.attempts = tuple(attempts)
        super().__init__(failure_summary(self.attempts))


class AllProvidersFailed(AnswerFailed):
    """Every provider in the chain failed in a way that moves on (rule 6): try again later."""

    status = 503
    title = "No answering provider could answer"


class ProviderRejected(AnswerFailed):
    """A provider refused the request itself (400, 404…): the next one would too, so none is
    tried after it. A configuration problem (model name, MAX_OUTPUT_TOKENS) more often than not."""


class EmbeddingFailed(RuntimeError):
    """The embedding provider failed; there is no fallback for embeddings (vectors from
    another model could not be compared with the stored ones)."""

    title = "The embedding provider could not be used"

    def __init__(self, attempt: Attempt):
        self.attempt = attempt
        self.status = 503 if attempt.failure is not FailureKind.REJECTED else 502
        super().__init__(f"embedding provider {attempt.describe()}")


def classify_failure(error: BaseException) -> tuple[FailureKind, int | None] | None:
    """The failure kind (and HTTP status) of an answering provider's exception; None when
    it is not a provider failure at all. An SDK that was never imported raised nothing, so
    each is looked up in ``sys.modules`` rather than imported here."""
    if isinstance(error, trio.TooSlowError):
        return FailureKind.TIMEOUT, None
    for sdk in ("openai", "anthropic"):  # the same Stainless-generated error classes
        module = sys.modules.get(sdk)
        if module is None:
            continue
        if isinstance(error, module.APITimeoutError):
            return FailureKind.TIMEOUT, None
        if isinstance(error, module.APIConnectionError):
            return FailureKind.UNAVAILABLE, None
        if isinstance(error, module.APIStatusError):
            kind = _anthropic_error_type(error) if sdk == "anthropic" else None
            return kind or classify_status(error.status_code), error.status_code
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(error, genai_errors.APIError):
        # A wrong key is a 400 with reason API_KEY_INVALID; a 400 FAILED_PRECONDITION says the
        # account cannot be used from here ("User location is not supported", no billing).
        if _gemini_key_invalid(error.details) or error.status == "FAILED_PRECONDITION":
            return FailureKind.BAD_KEY, error.code
        return classify_status(error.code), error.code
    httpx = sys.modules.get("httpx")  # the client the genai SDK runs on
    if httpx is not None:
        if isinstance(error, httpx.TimeoutException):
            return FailureKind.TIMEOUT, None
        if isinstance(error, httpx.TransportError):
            return FailureKind.UNAVAILABLE, None
    return None


_ANTHROPIC_ERROR_TYPES = {
    "rate_limit_error": FailureKind.RATE_LIMITED,
    "overloaded_error": FailureKind.UNAVAILABLE,
    "api_error": FailureKind.UNAVAILABLE,
    "timeout_error": FailureKind.TIMEOUT,
    "authentication_error": FailureKind.BAD_KEY,
    "permission_error": FailureKind.BAD_KEY,
    "billing_error": FailureKind.BAD_KEY,
}


def _anthropic_error_type(error: Any) -> FailureKind | None:
    """By the body's error type: an ``error`` event mid-stream arrives on a 200 response.
    An account out of credit is a 400 invalid_request_error that another provider avoids."""
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    if "credit balance is too low" in str(inner.get("message", "")):
        return FailureKind.BAD_KEY
    return _ANTHROPIC_ERROR_TYPES.get(str(inner.get("type")))


def _gemini_key_invalid(details: Any) -> bool:
    """Gemini answers a wrong key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID."""
    body = details.get("error", details) if isinstance(details, dict) else {}
    reasons = (
        detail.get("reason") for detail in body.get("details") or () if isinstance(detail, dict)
    )
    return "API_KEY_INVALID" in reasons
