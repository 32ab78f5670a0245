"""How a provider failed: each SDK's exceptions mapped into ragcore's failure kinds, and
the errors the API reports them with (see ragio.http.problems)."""

from __future__ import annotations

import json
import re
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

    def __init__(self, attempts: Sequence[Attempt], summary: str | None = None):
        self.attempts = tuple(attempts)
        super().__init__(summary or failure_summary(self.attempts))


class AllProvidersFailed(AnswerFailed):
    """Every provider in the chain failed in a way that moves on (rule 6): try again later."""

    status = 503
    title = "No answering provider could answer"


class ProviderRejected(AnswerFailed):
    """A provider refused the request itself (400, 404…): the next one would too, so none is
    tried after it. A configuration problem (model name, MAX_OUTPUT_TOKENS) more often than not."""


class AnswerBroken(AnswerFailed):
    """A streamed answer whose provider failed after its first words were sent: the client
    has seen them, so no other provider is asked to start again (rule 6 moves on only before
    the first words). 503, or 502 when the provider rejected the request."""

    title = "The answer broke off"

    def __init__(self, attempt: Attempt):
        summary = f"the answer broke off after its first words: {attempt.describe()}"
        super().__init__([attempt], summary)
        self.status = 502 if attempt.failure is FailureKind.REJECTED else 503


class EmbeddingFailed(RuntimeError):
    """The embedding provider failed; there is no fallback for embeddings (vectors from
    another model could not be compared with the stored ones)."""

    title = "The embedding provider could not be used"

    def __init__(self, attempt: Attempt):
        self.attempt = attempt
        self.status = 503 if attempt.failure is not FailureKind.REJECTED else 502
        super().__init__(f"embedding provider {attempt.describe()}")


class BadReply(Exception):
    """A provider answered (HTTP 200) with what its API does not promise: a body that is not
    JSON, JSON without the reply or of the wrong types, no text at all.

    Raised where a provider reads its reply. ``reason`` says what was wrong and reaches the
    client, so it is in our words: never the provider's text, which may quote anything.
    """

    def __init__(self, reason: str, status: int | None = 200) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


def no_text(finished: Any = None, what: str = "finish reason") -> BadReply:
    """A reply without any text; ``finished`` is the provider's finish (or stop, or block)
    reason when it gave one: MAX_TOKENS says the allowance went on thinking."""
    shown = finished.value if isinstance(getattr(finished, "value", None), str) else finished
    if isinstance(shown, str) and _WORD.fullmatch(shown):
        return BadReply(f"no text ({what} {shown})")
    return BadReply("no text")


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,40}")  # an enum value, not prose from the server
_MEDIA_TYPE = re.compile(r"[a-z]+/[a-z0-9.+-]{1,60}")


def stream_without_text(
    content_type: str | None,
    events: int,
    missing: str | None,
    finished: object,
    what: str = "finish reason",
) -> BadReply:
    """What was wrong with a stream that ended without any text: a body that was no stream
    at all (a web page: its media type is named), no events, events that lacked what
    carries the text (``missing``: ``choices``…), or well-formed events without text
    (``finished``: their finish reason)."""
    media_type = (content_type or "").split(";")[0].strip().lower()
    if not events and "event-stream" not in media_type:
        shown = f" ({media_type})" if _MEDIA_TYPE.fullmatch(media_type) else ""
        return BadReply(f"a body that is not server-sent events{shown}")
    if not events:
        return BadReply("an empty stream")
    if missing is not None:
        return BadReply(f"events without {missing}")
    return no_text(finished, what)


def attempt_of(provider: str, error: BaseException) -> Attempt | None:
    """The failed attempt ``error`` makes of calling ``provider``; None when it is no provider
    failure at all (a bug of ours, to be raised)."""
    reason = bad_reply_reason(error)
    if reason is not None:
        return Attempt(provider, FailureKind.BAD_REPLY, _reply_status(error), reason)
    classified = classify_failure(error)
    return None if classified is None else Attempt(provider, *classified)


def bad_reply_reason(error: BaseException) -> str | None:
    """What was wrong with the reply when ``error`` says a provider's reply could not be read
    (``BadReply``, or an SDK failing to read it); None for any other error.

    Every SDK reads a body with ``json.loads`` and lets its JSONDecodeError out (the request
    is only ever written, never parsed, so the reply is what was not JSON); google-genai
    wraps it in UnknownApiResponseError when streaming, and checks the reply's shape with
    pydantic (its ``…Response`` models; a request it refuses fails on another model).
    Bytes that do not decode raise a UnicodeDecodeError out of an SDK's UTF-8 decoder, or
    out of ``json.loads``, which takes a body starting with a NUL byte for UTF-16 or -32
    (ragio.providers.wire refuses bytes that are not UTF-8 before any SDK reads them).
    """
    if isinstance(error, BadReply):
        return error.reason
    if isinstance(error, json.JSONDecodeError):
        return "a body that is not JSON"
    if isinstance(error, UnicodeDecodeError):
        utf8 = error.encoding.replace("_", "-").lower() in ("utf-8", "utf8")
        return "a body that is not UTF-8" if utf8 else "a body that is not JSON"
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(error, genai_errors.UnknownApiResponseError):
        return "a body that is not JSON"
    pydantic = sys.modules.get("pydantic")
    if (
        pydantic is not None
        and isinstance(error, pydantic.ValidationError)
        and error.title.endswith("Response")
    ):
        return f"JSON of the wrong shape{_where(error)}"
    for sdk in ("openai", "anthropic"):  # only raised when a client validates strictly
        module = sys.modules.get(sdk)
        if module is not None and isinstance(error, module.APIResponseValidationError):
            return "JSON of the wrong shape"
    return None


def _reply_status(error: BaseException) -> int | None:
    """An SDK raises only on reading a success: any error status raises its own error first."""
    return error.status if isinstance(error, BadReply) else 200


def _where(error: Any) -> str:
    """Where in the reply pydantic found the first wrong field, as a path of the SDK's own
    field names and list indexes ("candidates.0.content.parts.0.text"); never its value."""
    try:
        location = error.errors()[0]["loc"]
    except (IndexError, KeyError, TypeError):
        return ""
    steps = [str(step) for step in location if isinstance(step, int) or _WORD.fullmatch(step)]
    return f" at {'.'.join(steps)}" if steps and len(steps) == len(location) else ""


def classify_failure(error: BaseException) -> tuple[FailureKind, int | None] | None:
    """The failure kind (and HTTP status) of an answering provider's exception; None when
    it is not a provider failure at all. An SDK that was never imported raised nothing, so
    each is looked up in ``sys.modules`` rather than imported here."""
    if bad_reply_reason(error) is not None:
        return FailureKind.BAD_REPLY, _reply_status(error)
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
        if isinstance(error, module.APIError):  # an error event in a 200 stream (OpenRouter's)
            return _in_band(error.body), None
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(error, genai_errors.APIError):
        # A wrong key is a 400 with reason API_KEY_INVALID; a 400 FAILED_PRECONDITION says the
        # account cannot be used from here ("User location is not supported", no billing).
        if _gemini_key_invalid(error.details) or error.status == "FAILED_PRECONDITION":
            return FailureKind.BAD_KEY, error.code
        return classify_status(error.code), error.code
    # The clients the SDKs run on: httpx for genai, httpx2 for openai and anthropic, whose
    # errors reading a stream's events come out as they are.
    for client in ("httpx", "httpx2"):
        httpx = sys.modules.get(client)
        if httpx is None:
            continue
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


def _in_band(body: Any) -> FailureKind:
    """The failure an error event in a stream reports: by its ``code`` when that is an HTTP
    status (OpenRouter sends the upstream's), else an outage."""
    code = body.get("code") if isinstance(body, dict) else None
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
        return classify_status(code)
    return FailureKind.UNAVAILABLE


def _anthropic_error_type(error: Any) -> FailureKind | None:
    """By the body's error type: an ``error`` event mid-stream arrives on a 200 response.
    An account out of credit is a 400 invalid_request_error that another provider avoids."""
    body: dict[str, Any] = error.body if isinstance(error.body, dict) else {}
    inner: Any = body.get("error") if isinstance(body.get("error"), dict) else body
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
