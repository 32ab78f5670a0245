"""POST /chat: a grounded, cited answer to a question."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from quart import Blueprint, Response, current_app, request

from ragcore.api.chat import ChatQuery, ChatQuestion, event_stream, sse
from ragcore.api.converter import converter, structure_body
from ragcore.api.operations import Reply, operation
from ragcore.chat.pipeline import ChatAnswer, ChatPolicy, ChatRequest, answer_question
from ragio.employees.lookup import stored_role
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import problem_for
from ragio.runner import run, stream

blueprint = Blueprint("chat", __name__)
log = logging.getLogger(__name__)
ASKED = {"body": ChatQuestion, "body_required": False, "query": ChatQuery}
ANSWER_FAILURES = (404, 422, 502, 503)
ASKED_FIELDS = ("question", "role", "user")


async def chat_request() -> ChatRequest:
    """Query parameters ``question``, ``role`` and ``user``; a JSON body with the same
    fields also works.

    ``role`` is looked up among the stored roles (built-in and runtime): an unknown one is
    404, never a silent fallback to answering without a role. ``user`` names the end user
    asking (an id of the caller's choosing, kept only as a hash): roles learn from the
    questions many users ask, not from one user asking many times."""
    args = {k: v for k, v in request.args.to_dict().items() if k in ASKED_FIELDS}
    asked = structure_body({**await json_body(required=False), **args}, ChatQuestion)
    question, asker, role = asked.question, asked.user, asked.role or None
    # live-data actions see /chat as the channel "chat", and ``user`` as {caller}
    if role is None:
        return ChatRequest(question=question, asker=asker, channel="chat", user_identifier=asker)
    employee = await stored_role(service().database, role)  # an unknown one is 404
    # origin "chat": the API's callers hold its key; a proposal still meets the gate
    return ChatRequest(
        question=question,
        employee=employee,
        asker=asker,
        origin="chat",
        channel="chat",
        user_identifier=asker,
    )


@blueprint.post("/chat")
@operation(Reply(200, "The answer and its sources", ChatAnswer), *ANSWER_FAILURES, **ASKED)
async def chat() -> ChatAnswer:
    """Answer a question from the documents, with citations"""
    req = await chat_request()
    svc = service()
    return await run(answer_question(req, ChatPolicy.from_settings(svc.settings)), svc)


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
    req = await chat_request()
    svc = service()
    pipeline = answer_question(req, ChatPolicy.from_settings(svc.settings))
    # a failure before the first event raises here: the app's error handlers answer
    answer = await stream(pipeline, svc, current_app.nursery)  # type: ignore[attr-defined]

    async def events() -> AsyncIterator[bytes]:
        streamed = False
        try:
            async for _, payload in answer:
                if isinstance(payload, str):
                    streamed = True
                    yield sse("token", {"text": payload})
                elif isinstance(payload, Exception):
                    log.error("chat stream failed", exc_info=payload)
                    yield sse("error", problem_for(payload).body())
                else:
                    if not streamed and payload.answer:  # nothing generated: say it anyway
                        yield sse("token", {"text": payload.answer})
                    yield sse("done", converter.unstructure(payload))
        finally:
            answer.cancel()  # the client went away, or we are done

    return Response(
        events(),
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
