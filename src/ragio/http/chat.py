"""POST /chat: a grounded, cited answer to a question."""

from __future__ import annotations

from typing import Any

import attrs
from quart import Blueprint, Response, request

from ragcore.api.chat import (
    ChatQuery,
    ChatQuestion,
    event_stream,
    query_conversation_id,
    sse,
)
from ragcore.api.operations import Reply, operation
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.chat.turn import TurnRequest
from ragcore.converter import converter, structure_body
from ragio.employees.lookup import stored_role
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import problem_for
from ragio.http.turns import answer_turn, stream_turn

blueprint = Blueprint("chat", __name__)
ASKED = {"body": ChatQuestion, "body_required": False, "query": ChatQuery}
ANSWER_FAILURES = (404, 422, 502, 503)
ASKED_FIELDS = ("question", "role", "user", "conversation_id")


@attrs.frozen
class ChatWire:
    """/chat/stream's events: ``token``, then ``done`` (the ChatAnswer) or ``error``."""

    def opening(self) -> list[bytes]:
        return []

    def token(self, text: str) -> bytes:
        return sse("token", {"text": text})

    def failed(self, error: Exception) -> bytes:
        return sse("error", problem_for(error).body())

    def done(self, answer: ChatAnswer, streamed: bool) -> list[bytes]:
        said = [] if streamed or not answer.answer else [self.token(answer.answer)]
        return [*said, sse("done", converter.unstructure(answer))]  # nothing streamed: say it

    def closing(self) -> list[bytes]:
        return []


async def chat_turn() -> TurnRequest:
    """Query parameters ``question``, ``role``, ``user`` and ``conversation_id``; a JSON
    body with the same fields also works.

    ``role`` is looked up among the stored roles (built-in and runtime): an unknown one is
    404, never a silent fallback to answering without a role. ``user`` names the end user
    asking (an id of the caller's choosing, kept only as a hash): roles learn from the
    questions many users ask, not from one user asking many times. ``conversation_id``
    continues a conversation (an unknown one is 404): its exchanges are the history a
    follow-up is read with."""
    args: dict[str, Any] = {
        name: value
        for name, value in request.args.to_dict().items()
        if name in ASKED_FIELDS and value != ""  # an empty one is not given
    }
    if "conversation_id" in args:  # digits in a query string
        args["conversation_id"] = query_conversation_id(args["conversation_id"])
    asked = structure_body({**await json_body(required=False), **args}, ChatQuestion)
    employee = None
    if asked.role:  # an unknown one is 404
        employee = await stored_role(service().database, asked.role)
    # live-data actions see /chat as the channel "chat", and ``user`` as {caller}; with a
    # role, origin "chat": the API's callers hold its key, and a proposal still meets the gate
    req = ChatRequest(
        question=asked.question,
        employee=employee,
        asker=asked.user,
        origin="chat" if employee is not None else None,
        channel="chat",
        user_identifier=asked.user,
    )
    return TurnRequest(req, "chat", asked.user, conversation_id=asked.conversation_id)


@blueprint.post("/chat")
@operation(Reply(200, "The answer and its sources", ChatAnswer), *ANSWER_FAILURES, **ASKED)
async def chat() -> ChatAnswer:
    """Answer a question from the documents, with citations

    Each answer is recorded as a turn of a conversation (GET /conversations); send its
    conversation_id back with the next question to follow up ("and for shoes?")."""
    return await answer_turn(await chat_turn())


@blueprint.post("/chat/stream")
@operation(
    Reply(
        200,
        "An event stream: `token` events, then one `done` or `error` event",
        event_stream,
        "text/event-stream",
    ),
    *ANSWER_FAILURES,
    **ASKED,
)
async def chat_stream() -> Response:
    """The same answer as server-sent events

    `token` events (`{"text": …}`) as the answer is written, then one `done` event whose
    data is the ChatAnswer /chat returns (citations, usage, language). A failure before
    the first event is an ordinary problem+json response; after it, an `error` event
    whose data is a problem."""
    # a failure before the first event raises here: the app's error handlers answer
    return await stream_turn(await chat_turn(), ChatWire())
