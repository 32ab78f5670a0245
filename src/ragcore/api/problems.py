"""The body of every error the API returns (RFC 9457 problem details)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

import attrs

from ragcore.chat.fallback import FailureKind
from ragcore.schema import described

FAILURES = tuple(kind.value for kind in FailureKind)


@attrs.frozen
class ProviderAttempt:
    provider: str
    failure: Annotated[str, described(enum=list(FAILURES))]
    status: int | None
    reason: str = ""


@attrs.frozen
class Problem:
    type: str
    title: str
    status: int
    detail: str
    field: Annotated[str, described("the input at fault, if one")] = ""
    providers: Annotated[
        tuple[ProviderAttempt, ...], described("502 and 503 from answering: each provider tried")
    ] = ()
    action_id: Annotated[str, described("the action a refusal or failure is about")] = ""
    action_status: Annotated[str, described()] = ""
    existing_id: Annotated[
        int | None, described("409 of a memory item or a document: the one already stored")
    ] = None
    trace_id: Annotated[
        str,
        described("the request's trace (32 hex digits), when OTEL_EXPORTER_OTLP_ENDPOINT is set"),
    ] = ""


class ProblemError(Exception):
    """Raise anywhere in a request, in a rule or a route, to answer with a problem+json
    body of ``status`` and ``detail`` (``extra``: the Problem fields it adds)."""

    def __init__(self, status: int, detail: str, *, title: str | None = None, **extra: object):
        self.status = status
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.extra = extra
        super().__init__(detail)

    def body(self) -> dict[str, object]:
        """The problem+json body."""
        return {
            "type": "about:blank",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            **self.extra,
        }
