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
import secrets
from typing import Any

import attrs
from quart import Blueprint, Response, request

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
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.chat.turn import TurnRequest
from ragcore.inputs import NestedTooDeep, NotJSON, parse_json
from ragio.employees import store
from ragio.employees.store import StoredRole
from ragio.http.context import service
from ragio.http.problems import problem_for
from ragio.http.turns import answer_turn, stream_turn

blueprint = Blueprint("openai", __name__)
CHANNEL = "openai"


def openai_error(error: BaseException) -> OpenAIError:
    """``error`` as OpenAI clients read it: its problem's status, detail and headers
    (the database's 503 carries its Retry-After here too)."""
    if isinstance(error, OpenAIError):
        return error
    problem = problem_for(error)
    param = problem.extra.get("field")
    return OpenAIError(
        problem.status,
        problem.detail,
        param=param if isinstance(param, str) else None,
        headers=getattr(problem, "headers", None),
    )


def error_response(error: OpenAIError, headers: dict[str, str] | None = None) -> Response:
    """The OpenAI-shaped error, with its own headers (Retry-After) and ``headers``."""
    return Response(
        json.dumps(error.body()),
        status=error.status,
        content_type="application/json",
        headers={**error.headers, **(headers or {})},
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
    made = Completion(
        f"chatcmpl-{secrets.token_hex(12)}", int(service().clock.now().timestamp()), model
    )
    try:
        if not streamed:
            return made.whole(await answer_turn(turn))
        return await stream_turn(turn, CompletionWire(made, include_usage))
    except Exception as error:  # before any event: an OpenAI error body
        raise openai_error(error) from error


@attrs.frozen
class CompletionWire:
    """A streamed completion's events: ``chat.completion.chunk`` data lines (the usage
    chunk last when asked for), an error body when it failed, then ``[DONE]``."""

    made: Completion
    include_usage: bool

    def _event(self, data: dict[str, Any]) -> bytes:
        return f"data: {json.dumps(data)}\n\n".encode()

    def _chunk(
        self, delta: dict[str, Any], finish: str | None = None, fields: dict[str, Any] | None = None
    ) -> bytes:
        usage_field = {"usage": None} if self.include_usage else {}
        return self._event(self.made.chunk(delta, finish, **usage_field, **(fields or {})))

    def opening(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def token(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def failed(self, error: Exception) -> bytes:
        return self._event(openai_error(error).body())

    def done(self, answer: ChatAnswer, streamed: bool) -> list[bytes]:
        said = [] if streamed or not answer.answer else [self.token(answer.answer)]
        usage = [self._event(self.made.usage_chunk(answer))] if self.include_usage else []
        return [*said, self._chunk({}, "stop", extras(answer)), *usage]

    def closing(self) -> list[bytes]:
        return [b"data: [DONE]\n\n"]
