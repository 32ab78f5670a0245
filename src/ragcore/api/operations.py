"""What each route takes and answers, declared once beside it with ``@operation``, and
the OpenAPI 3.1 document made from those declarations and the shapes they name.

The summary is the first line of the route's docstring, the description the rest.
Errors are named by status only: each is a problem+json body (``Problem``); 401, 403
(a key without the scope) and 429 (a key over its rate) are added for every route behind
the API key, and 400 and 415 for every JSON body. Each route's security requirement lists
the scopes that open it (``ragcore.api.keys.ROUTE_SCOPES``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ParamSpec

import attrs

from ragcore.api.keys import scopes_of
from ragcore.api.problems import Problem
from ragcore.schema import OneOf, Schemas

JSON = "application/json"
P = ParamSpec("P")
_PATH_PARAMETER = re.compile(r"\{(\w+)\}")


@attrs.frozen
class Reply:
    """A successful answer: its status, what it means, and its body (an attrs class for
    JSON, or a schema with its media type; none for 204)."""

    status: int
    description: str
    shape: Any = None
    media_type: str = JSON


@attrs.frozen
class Operation:
    replies: tuple[Reply, ...]
    errors: tuple[int, ...] = ()
    body: type | OneOf | None = None  # a JSON request body (of one of several shapes)
    body_required: bool = True
    other_bodies: tuple[tuple[str, Any], ...] = ()  # (media type, schema or class)
    query: type | None = None  # its fields are the query parameters
    path: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # parameter schemas
    headers: dict[str, str] = attrs.field(factory=dict)  # header name: meaning
    open: bool = False  # needs no API key (verified otherwise, or public)
    #: (media type, schema) of every error the route answers, when it is no problem+json
    #: (the OpenAI-compatible API's errors are OpenAI-shaped)
    error_body: tuple[str, Any] | None = None


def operation(
    *answers: Reply | int, **declared: Any
) -> Callable[[Callable[P, Awaitable[object]]], Callable[P, Awaitable[Any]]]:
    """Declare a route's contract on the route function itself: its replies, the
    statuses of its problems, and the rest of ``Operation`` by name.

    A route may answer with a shape (an attrs class) that its web framework does not know
    how to send; the app's response making does, so what it answers is Any from here on."""
    replies = tuple(answer for answer in answers if isinstance(answer, Reply))
    errors = tuple(answer for answer in answers if isinstance(answer, int))

    def declare(route: Callable[P, Awaitable[object]]) -> Callable[P, Awaitable[Any]]:
        found = Operation(replies, errors, **declared)
        route.__operation__ = found  # type: ignore[attr-defined]
        return route

    return declare


def declared(route: Callable[..., Any]) -> Operation | None:
    return getattr(route, "__operation__", None)


def openapi_document(
    routes: Iterable[tuple[str, str, Callable[..., Any]]], info: dict[str, Any]
) -> dict[str, Any]:
    """OpenAPI 3.1 for ``routes`` (path as ``/a/{b}``, method, route function)."""
    schemas = Schemas()
    problem = schemas.ref(Problem)
    paths: dict[str, dict[str, Any]] = {}
    for path, method, route in sorted(routes, key=lambda r: (r[0], r[1])):
        found = declared(route)
        if found is None:
            raise ValueError(f"{method} {path} declares no @operation")
        described = _operation(path, route, found, schemas)
        if not found.open:
            described["security"] = [{"ApiKey": list(scopes_of(method, path))}]
        paths.setdefault(path, {})[method.lower()] = described
    return {
        "openapi": "3.1.0",
        "info": info,
        "components": {
            "securitySchemes": {
                "ApiKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-API-Key",
                    "description": "SERVICE_API_KEY, or a key made with POST /keys (also as "
                    "Authorization: Bearer). An operation's security lists the scopes that "
                    "open it; admin opens every one.",
                }
            },
            "responses": {
                "Problem": {
                    "description": "An RFC 9457 problem",
                    "content": {"application/problem+json": {"schema": problem}},
                }
            },
            "schemas": dict(sorted(schemas.components.items())),
        },
        "security": [{"ApiKey": []}],
        "paths": paths,
    }


def _operation(path: str, route: Callable[..., Any], op: Operation, schemas: Schemas) -> Any:
    summary, _, description = (inspect.getdoc(route) or "").partition("\n")
    described: dict[str, Any] = {"summary": summary.strip()}
    if description.strip():
        described["description"] = " ".join(description.split())
    if op.open:
        described["security"] = []
    parameters = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": schemas.request(op.path.get(name, {"type": "string"})),
        }
        for name in _PATH_PARAMETER.findall(path)
    ]
    if op.query is not None:
        parameters += _query_parameters(op.query, schemas)
    parameters += [
        {"name": name, "in": "header", "schema": {"type": "string"}, "description": meaning}
        for name, meaning in op.headers.items()
    ]
    if parameters:
        described["parameters"] = parameters
    content = {media: _request_body(shape, schemas) for media, shape in op.other_bodies}
    if op.body is not None:
        content = {JSON: schemas.body(op.body), **content}
    if content:
        described["requestBody"] = {
            "required": op.body_required,
            "content": {media: {"schema": schema} for media, schema in content.items()},
        }
    errors = set(op.errors) | ({400, 415} if op.body is not None else set())
    if not op.open:
        errors |= {401, 403, 429}
    responses: dict[str, Any] = {}
    for reply in op.replies:  # replies of one status in several media types: one answer
        answer: dict[str, Any] = responses.setdefault(str(reply.status), {})
        answer["description"] = "; ".join(
            filter(None, (answer.get("description"), reply.description))
        )
        if reply.shape is not None:
            schema = _body_schema(reply.shape, schemas)
            answer.setdefault("content", {})[reply.media_type] = {"schema": schema}
    for status in sorted(errors):
        if op.error_body is not None:
            media, shape = op.error_body
            responses[str(status)] = {
                "description": "An error",
                "content": {media: {"schema": _body_schema(shape, schemas)}},
            }
        else:
            responses[str(status)] = {"$ref": "#/components/responses/Problem"}
    described["responses"] = responses
    return described


def _body_schema(shape: Any, schemas: Schemas) -> dict[str, Any]:
    """A body's schema: of a type, as given (a dict), or made by a function of ``schemas``."""
    if isinstance(shape, dict):
        return shape
    if callable(shape) and not isinstance(shape, type) and not attrs.has(shape):
        made: dict[str, Any] = shape(schemas)
        return made
    return schemas.of(shape)


def _request_body(shape: Any, schemas: Schemas) -> dict[str, Any]:
    """A request body's schema: an attrs class as a closed shape, the others as given;
    either way, with what the service takes of its text (``Schemas.request``)."""
    if attrs.has(shape) or isinstance(shape, OneOf):
        return schemas.body(shape)
    return schemas.request(_body_schema(shape, schemas))


def _query_parameters(cls: type, schemas: Schemas) -> list[dict[str, Any]]:
    described = schemas.object(cls)
    required = set(described.get("required", ()))
    parameters = []
    for name, schema in described["properties"].items():
        schema = schemas.request(schema)
        parameter = {"name": name, "in": "query", "required": name in required}
        if "description" in schema:
            parameter["description"] = schema.pop("description")
        parameters.append({**parameter, "schema": schema})
    return parameters
