"""Reading request input: JSON bodies and query parameters, with clear errors."""

from __future__ import annotations

from typing import Any

from quart import request

from ragcore.inputs import NotJSON, check_text_input, parse_json
from ragio.http.problems import Problem


async def json_body(*, required: bool) -> dict[str, Any]:
    """The request's JSON object; {} when absent and not required; 400/415 otherwise,
    413 when nested too deep and 422 naming a field whose text cannot be stored
    (``ragcore.inputs.parse_json``)."""
    data = await request.get_data(as_text=False)
    if not data.strip():
        if required:
            raise Problem(400, "send a JSON object as the request body")
        return {}
    if request.mimetype not in ("application/json", "") and not request.mimetype.endswith("+json"):
        raise Problem(415, f"send the body as application/json, not {request.mimetype}")
    try:
        body = parse_json(data)
    except NotJSON as error:
        raise Problem(400, f"the body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise Problem(400, "the body must be a JSON object")
    return body


async def check_request_text() -> None:
    """Query parameters (names and values) and path segments, checked before any route
    runs: text that cannot be stored is a 422 naming the parameter. A coroutine, though it
    awaits nothing: Quart runs a plain function in a worker thread, a hop that cost every
    request more than the check itself."""
    for name, value in request.args.items(multi=True):
        check_text_input(name, "query parameter names")
        check_text_input(value, name)
    for name, value in (request.view_args or {}).items():
        if isinstance(value, str):
            check_text_input(value, name)
