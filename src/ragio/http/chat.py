"""POST /chat: a grounded, cited answer to a question."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import attrs
from quart import Blueprint, Response, current_app, request

from ragcore.api.chat import (
    ChatQuery,
    ChatQuestion,
    event_stream,
    query_conversation_id,
    sse,
)
from ragcore.api.converter import converter, structure_body
from ragcore.api.operations import Reply, operation
from ragcore.chat.followup import Exchange
from ragcore.chat.history import RecordTurn, turn_record
from ragcore.chat.pipeline import ChatAnswer, ChatRequest, answer_question
from ragio import conversations
from ragio.chat.handlers import record_turn
from ragio.chat.policy import chat_policy
from ragio.employees.lookup import stored_role
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import problem_for
from ragio.runner import run, stream
from ragio.service import Service

blueprint = Blueprint("chat", __name__)
log = logging.getLogger(__name__)
ASKED = {"body": ChatQuestion, "body_required": False, "query": ChatQuery}
ANSWER_FAILURES = (404, 422, 502, 503)
ASKED_FIELDS = ("question", "role", "user", "conversation_id")


@attrs.frozen
class Turn:
    """A question on its way to an answer, and where the answer is recorded: the
    conversation ``conversation_id`` on ``channel`` (None: one begins with this turn);
    ``started``, when the turn began (the service's clock)."""

    request: ChatRequest
    channel: str
    started: datetime
    conversation_id: int | None = None
    participant: str | None = None


async def record(svc: Service, turn: Turn, outcome: ChatAnswer | Exception) -> int | None:
    """Record the turn (answered or failed) in its conversation; the conversation's id.
    Recording never fails the answer: a failure is logged and None returned."""
    answer = outcome if isinstance(outcome, ChatAnswer) else None
    kept = turn_record(
        turn.channel,
        turn.conversation_id,
        turn.request,
        answer,
        participant=turn.participant,
        started=turn.started,
    )
    try:
        return await record_turn(RecordTurn(kept), svc)
    except Exception:
        log.exception("could not record a turn of a conversation on %s", turn.channel)
        return None


async def answered(svc: Service, turn: Turn, answer: ChatAnswer) -> ChatAnswer:
    """``answer``, recorded, with the id of the conversation it was recorded in."""
    return attrs.evolve(answer, conversation_id=await record(svc, turn, answer))


async def chat_turn() -> Turn:
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
    question, asker, role = asked.question, asked.user, asked.role or None
    history: tuple[Exchange, ...] = ()
    if asked.conversation_id is not None:  # an unknown one is 404
        found = await service().database.run(conversations.load_history, asked.conversation_id)
        history = tuple(found)
    # live-data actions see /chat as the channel "chat", and ``user`` as {caller}
    if role is None:
        req = ChatRequest(
            question=question,
            asker=asker,
            channel="chat",
            user_identifier=asker,
            history=history,
        )
    else:
        employee = await stored_role(service().database, role)  # an unknown one is 404
        # origin "chat": the API's callers hold its key; a proposal still meets the gate
        req = ChatRequest(
            question=question,
            employee=employee,
            asker=asker,
            origin="chat",
            channel="chat",
            user_identifier=asker,
            history=history,
        )
    return Turn(req, "chat", service().clock.now(), asked.conversation_id, asker)


@blueprint.post("/chat")
@operation(Reply(200, "The answer and its sources", ChatAnswer), *ANSWER_FAILURES, **ASKED)
async def chat() -> ChatAnswer:
    """Answer a question from the documents, with citations

    Each answer is recorded as a turn of a conversation (GET /conversations); send its
    conversation_id back with the next question to follow up ("and for shoes?")."""
    turn = await chat_turn()
    svc = service()
    try:
        answer = await run(answer_question(turn.request, chat_policy(svc)), svc)
    except Exception as error:
        await record(svc, turn, error)
        raise
    return await answered(svc, turn, answer)


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
    turn = await chat_turn()
    svc = service()
    pipeline = answer_question(turn.request, chat_policy(svc))
    # a failure before the first event raises here: the app's error handlers answer
    try:
        answer = await stream(pipeline, svc, current_app.nursery)  # type: ignore[attr-defined]
    except Exception as error:
        await record(svc, turn, error)
        raise

    async def events() -> AsyncIterator[bytes]:
        streamed = False
        try:
            async for _, payload in answer:
                if isinstance(payload, str):
                    streamed = True
                    yield sse("token", {"text": payload})
                elif isinstance(payload, Exception):
                    log.error("chat stream failed", exc_info=payload)
                    await record(svc, turn, payload)
                    yield sse("error", problem_for(payload).body())
                else:
                    if not streamed and payload.answer:  # nothing generated: say it anyway
                        yield sse("token", {"text": payload.answer})
                    payload = await answered(svc, turn, payload)
                    yield sse("done", converter.unstructure(payload))
        finally:
            answer.cancel()  # the client went away, or we are done

    return Response(
        events(),
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
