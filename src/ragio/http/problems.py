"""RFC 9457 problem details: the body of every error the API returns."""

from __future__ import annotations

import json

from quart import Response

from ragcore.api.problems import ProblemError

PROBLEM_JSON = "application/problem+json"


Problem = ProblemError  # raise anywhere in a request to answer with a problem+json body


def problem_for(error: BaseException) -> Problem:
    """The problem an error is reported as: its own status and detail for the errors we
    know, a plain 500 that reveals nothing for the rest."""
    from ragcore.errors import InvalidInput, TooLarge
    from ragcore.inputs import NestedTooDeep
    from ragio.employees.lookup import UnknownRole
    from ragio.providers.batching import EmbeddingDimensionsMismatch
    from ragio.providers.failures import AnswerFailed, EmbeddingFailed

    if isinstance(error, Problem):
        return error
    if isinstance(error, NestedTooDeep):
        return Problem(413, f"{error}; send a flatter body")
    if isinstance(error, TooLarge):
        return Problem(413, error.message, field=error.field)
    if isinstance(error, UnknownRole):
        return Problem(404, str(error))
    if isinstance(error, InvalidInput):
        return Problem(422, error.message, field=error.field)
    if isinstance(error, AnswerFailed):  # AllProvidersFailed: 503; ProviderRejected: 502
        providers = [attempt.as_dict() for attempt in error.attempts]
        return Problem(error.status, str(error), title=error.title, providers=providers)
    if isinstance(error, EmbeddingFailed):
        return Problem(error.status, str(error), title=error.title)
    if isinstance(error, EmbeddingDimensionsMismatch):  # a configuration to change: says which
        return Problem(502, str(error), title="The embedding provider's vectors do not fit")
    return Problem(500, "the service failed; the log has the details")


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(problem.body()),
        status=problem.status,
        content_type=PROBLEM_JSON,
        headers=headers,
    )
