"""POST /chat: a grounded, cited answer to a question."""

from __future__ import annotations

from typing import Any

import cattrs
from quart import Blueprint, request

from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question, check_question
from ragcore.employees.roles import BUILT_IN_ROLES, check_role_identifier
from ragio.http.context import service
from ragio.http.inputs import json_body, reject_unknown
from ragio.http.problems import Problem
from ragio.runner import run

blueprint = Blueprint("chat", __name__)
_converter = cattrs.Converter()


async def chat_request() -> ChatRequest:
    """Query parameters ``question`` and ``role``; a JSON body with the same fields also works."""
    body = await json_body(required=False)
    reject_unknown(body, {"question", "role"})
    fields: dict[str, Any] = {**body, **request.args.to_dict()}
    question = check_question(fields.get("question"))
    role = fields.get("role") or None
    if role is not None:
        role = check_role_identifier(role)
        if role not in BUILT_IN_ROLES:
            raise Problem(404, f"unknown role {role!r}; known roles: {', '.join(BUILT_IN_ROLES)}")
    return ChatRequest(question=question, role=role)


@blueprint.post("/chat")
async def chat() -> dict[str, Any]:
    req = await chat_request()
    svc = service()
    answer = await run(answer_question(req, ChatPolicy.from_settings(svc.settings)), svc)
    return _converter.unstructure(answer)
