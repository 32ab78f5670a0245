"""Reading request input: JSON bodies and query parameters, with clear errors."""

from __future__ import annotations

import json
from typing import Any

from quart import request

from ragcore.errors import refuse_unknown_fields
from ragio.http.problems import Problem


async def json_body(*, required: bool) -> dict[str, Any]:
    """The request's JSON object; {} when absent and not required; 400/415 otherwise."""
    data = await request.get_data(as_text=False)
    if not data.strip():
        if required:
            raise Problem(400, "send a JSON object as the request body")
        return {}
    if request.mimetype not in ("application/json", "") and not request.mimetype.endswith("+json"):
        raise Problem(415, f"send the body as application/json, not {request.mimetype}")
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise Problem(400, f"the body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise Problem(400, "the body must be a JSON object")
    return body


def reject_unknown(body: dict[str, Any], allowed: set[str]) -> None:
    refuse_unknown_fields(body, sorted(allowed), listing="allowed")
