"""The OpenAI-compatible API: GET /v1/models and POST /v1/chat/completions (plain and
``stream: true``), in OpenAI's wire format (``ragcore.api.openai_compat``).

The answer is /chat's, with the same grounding, citations, budgets, sensitivity and
language rules; the request's message history makes the conversation a follow-up is
read with. Each turn is recorded as a conversation on the channel ``openai``: a client
sending the same history back continues the conversation it began
(``ragcore.chat.history.continuation``).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

from quart import Blueprint, Response, current_app, request

from ragcore.api.openai_compat import (
    ERROR_BODY,
    REQUEST_SCHEMA,
    Completion,
    OpenAIError,
    extras,
    model_id,
    model_list,
    read_messages,
    read_options,
    role_of_model,
)
from ragcore.api.operations import JSON, Reply, operation
from ragcore.chat.pipeline import ChatRequest
from ragcore.chat.turn import TurnRequest, take_turn
from ragcore.inputs import NestedTooDeep, NotJSON, parse_json
from ragio.chat.policy import chat_policy
from ragio.employees import store
from ragio.employees.store import StoredRole
from ragio.http.chat import answered
from ragio.http.context import service
from ragio.http.problems import problem_for
from ragio.runner import run, stream

blueprint = Blueprint("openai", __name__)
log = logging.getLogger(__name__)
CHANNEL = "openai"


def openai_error(error: BaseException) -> OpenAIError:
    """``error`` as OpenAI clients read it: its problem's status and detail."""
    if isinstance(error, OpenAIError):
        return error
    problem = problem_for(error)
    param = problem.extra.get("field")
    return OpenAIError(
        problem.status, problem.detail, param=param if isinstance(param, str) else None
    )


def error_response(error: OpenAIError, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(error.body()),
        status=error.status,
        content_type="application/json",
        headers=headers,
    )


async def _roles() -> dict[str, StoredRole]:
    """The stored roles (seeded on the first call, as GET /employees does), by identifier."""
    roles = await service().database.run(store.list_roles)
    return {stored.role.identifier: stored for stored in roles}


def _listed(roles: dict[str, StoredRole]) -> dict[str, Any]:
    return model_list([(name, int(r.created_at.timestamp())) for name, r in roles.items()])


@blueprint.get("/v1/models")
@operation(
    Reply(200, "The models: ragchat, and ragchat-<role> for each role", dict),
    error_body=ERROR_BODY,
)
async def models() -> dict[str, Any]:
    """The models, as OpenAI lists them: the service, and one per AI employee"""
    return _listed(await _roles())


@blueprint.get("/v1/models/<model>")
@operation(
    Reply(200, "The model", dict), 404, path={"model": {"type": "string"}}, error_body=ERROR_BODY
)
async def one_model(model: str) -> dict[str, Any]:
    """One model, as OpenAI describes it"""
    roles = await _roles()
    wanted = model_id(role_of_model(model, list(roles)))
    return next(entry for entry in _listed(roles)["data"] if entry["id"] == wanted)


async def _turn(body: dict[str, Any], user: str | None) -> tuple[TurnRequest, str]:
    """The question as a turn of its conversation (the one its history continues), and
    the model name answered as."""
    roles = await _roles()
    role = role_of_model(body.get("model"), list(roles))
    question, history = read_messages(body.get("messages"))
    employee = roles[role].role if role is not None else None
    # the API's callers hold its key, as on /chat: a proposal still meets the gate
    req = ChatRequest(
        question=question,
        employee=employee,
        asker=user,
        origin="chat" if employee is not None else None,
        channel="chat",
        user_identifier=user,
        history=history,
    )
    return TurnRequest(req, CHANNEL, user), model_id(role)


async def _body() -> dict[str, Any]:
    """The JSON object sent, whatever its declared type (as OpenAI's API reads it), its
    text storable (422 naming the field otherwise: ``ragcore.inputs.parse_json``)."""
    try:
        body = parse_json(await request.get_data(as_text=False))
    except NotJSON:
        body = None
    except NestedTooDeep as error:
        raise OpenAIError(413, str(error)) from None
    if not isinstance(body, dict):
        raise OpenAIError(400, "the body must be a JSON object with model and messages")
    return body


@blueprint.post("/v1/chat/completions")
@operation(
    Reply(200, "A chat.completion", dict),
    Reply(
        200,
        "with stream: true, chat.completion.chunk events then [DONE]",
        {"type": "string"},
        "text/event-stream",
    ),
    400,
    404,
    413,
    422,
    502,
    503,
    other_bodies=((JSON, REQUEST_SCHEMA),),
    error_body=ERROR_BODY,
)
async def chat_completions() -> Any:
    """An answer from the documents, as an OpenAI chat completion

    The last message is the question; the messages before it are the conversation a
    follow-up is read with. The citations come as a field of their own, beside the
    answer's [n] markers."""
    try:
        body = await _body()
        streamed, include_usage, user = read_options(body)
        turn, model = await _turn(body, user)
    except Exception as error:
        raise openai_error(error) from error
    svc = service()
    made = Completion(f"chatcmpl-{secrets.token_hex(12)}", int(svc.clock.now().timestamp()), model)
    pipeline = take_turn(turn, chat_policy(svc))
    if not streamed:
        try:
            outcome = await run(pipeline, svc)
        except Exception as error:
            raise openai_error(error) from error
        return made.whole(answered(outcome, CHANNEL))
    try:
        pieces = await stream(pipeline, svc, current_app.nursery)  # type: ignore[attr-defined]
    except Exception as error:
        raise openai_error(error) from error

    def event(data: dict[str, Any]) -> bytes:
        return f"data: {json.dumps(data)}\n\n".encode()

    usage_field = {"usage": None} if include_usage else {}

    async def events() -> AsyncIterator[bytes]:
        streamed_text = False
        try:
            yield event(made.chunk({"role": "assistant", "content": ""}, **usage_field))
            async for _, payload in pieces:
                if isinstance(payload, str):
                    streamed_text = True
                    yield event(made.chunk({"content": payload}, **usage_field))
                elif isinstance(payload, Exception):
                    log.error("chat completion stream failed", exc_info=payload)
                    yield event(openai_error(payload).body())
                else:
                    answer = answered(payload, CHANNEL)
                    if not streamed_text and answer.answer:  # nothing generated: say it now
                        yield event(made.chunk({"content": answer.answer}, **usage_field))
                    yield event(made.chunk({}, "stop", **usage_field, **extras(answer)))
                    if include_usage:
                        yield event(made.usage_chunk(answer))
            yield b"data: [DONE]\n\n"
        finally:
            pieces.cancel()  # the client went away, or we are done

    return Response(
        events(),
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
