"""RFC 9457 problem details: the body of every error the API returns."""

from __future__ import annotations

import errno
import json

import psycopg
from quart import Response

from ragcore.api.problems import ProblemError
from ragio.tracing import trace_id

PROBLEM_JSON = "application/problem+json"


Problem = ProblemError  # raise anywhere in a request to answer with a problem+json body

#: Retry-After on a 503 of the database: the pool reconnects within about a second of the
#: database's return (ragio.db.pool)
DATABASE_RETRY_AFTER_SECONDS = 5


class DatabaseUnavailable(Problem):
    """503: the database is down, restarting, out of connections or too slow; carries its
    Retry-After."""

    def __init__(self, detail: str) -> None:
        super().__init__(503, detail, title="The database is unavailable")
        self.headers = {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}


def database_problem(error: psycopg.OperationalError) -> Problem:
    """A database that cannot take the request (class 53, 57 and 08 errors, and no pool
    connection in time), said without the server's message (it may name hosts)."""
    if isinstance(error, psycopg.errors.DiskFull):  # SQLSTATE 53100
        return Problem(
            507,
            "the database's disk is full, so the request could not be completed; free "
            "space on the database server's disk, then send it again",
            title="The database's disk is full",
        )
    if isinstance(error, psycopg.errors.QueryCanceled):  # statement_timeout
        return DatabaseUnavailable(
            "the database did not answer in time, so the request could not be completed"
        )
    return DatabaseUnavailable(
        "the database cannot be reached, so the request could not be completed; the "
        f"service reconnects by itself: try again in {DATABASE_RETRY_AFTER_SECONDS} seconds"
    )


def problem_for(error: BaseException) -> Problem:
    """The problem an error is reported as: its own status and detail for the errors we
    know, a plain 500 that reveals nothing for the rest."""
    from ragcore.errors import InvalidInput, TooLarge
    from ragcore.inputs import NestedTooDeep
    from ragcore.knowledge.documents import NameTaken
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
    if isinstance(error, NameTaken):
        return Problem(409, str(error), field="name", existing_id=error.holders[0].id)
    if isinstance(error, InvalidInput):
        return Problem(422, error.message, field=error.field)
    if isinstance(error, AnswerFailed):  # AllProvidersFailed: 503; ProviderRejected: 502
        providers = [attempt.as_dict() for attempt in error.attempts]
        return Problem(error.status, str(error), title=error.title, providers=providers)
    if isinstance(error, EmbeddingFailed):
        return Problem(error.status, str(error), title=error.title)
    if isinstance(error, EmbeddingDimensionsMismatch):  # a configuration to change: says which
        return Problem(502, str(error), title="The embedding provider's vectors do not fit")
    if isinstance(error, psycopg.OperationalError):  # PoolTimeout is one
        return database_problem(error)
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        # this machine's disk: a large request body's temporary file (TMPDIR), DATA_DIR
        return Problem(
            507,
            "the service's disk is full, so the request could not be completed; free space "
            "on the disk of the service's temporary files (TMPDIR) and DATA_DIR, then send "
            "it again",
            title="The service's disk is full",
        )
    return Problem(500, "the service failed; the log has the details")


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> Response:
    """The problem+json response, with the problem's own headers (Retry-After) and
    ``headers``; inside a trace, its id (``trace_id``), by which its trace is found."""
    body = problem.body()
    if (traced := trace_id()) is not None:
        body["trace_id"] = traced
    return Response(
        json.dumps(body),
        status=problem.status,
        content_type=PROBLEM_JSON,
        headers={**getattr(problem, "headers", {}), **(headers or {})},
    )
