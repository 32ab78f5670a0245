"""RFC 9457 problem details: the body of every error the API returns."""

from __future__ import annotations

import json
from http import HTTPStatus

from quart import Response

PROBLEM_JSON = "application/problem+json"


class Problem(Exception):
    """Raise anywhere in a request to answer with a problem+json body."""

    def __init__(self, status: int, detail: str, *, title: str | None = None, **extra: object):
        self.status = status
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.extra = extra
        super().__init__(detail)


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> Response:
    body = {
        "type": "about:blank",
        "title": problem.title,
        "status": problem.status,
        "detail": problem.detail,
        **problem.extra,
    }
    return Response(
        json.dumps(body), status=problem.status, content_type=PROBLEM_JSON, headers=headers
    )
