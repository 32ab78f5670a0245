"""GET /conversations and GET /conversations/{id}: the owner reads what the service was
asked and what it answered (``ragio.chat.conversations`` records them); POST
/conversations/{id}/turns/{turn}/feedback rates a turn's answer."""

from __future__ import annotations

import functools

from quart import Blueprint, request

from ragcore.api.conversations import (
    Conversation,
    Conversations,
    ConversationsQuery,
    TurnFeedback,
    turn_number,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.converter import converter, structure_body
from ragio.chat import conversations
from ragio.http.context import service
from ragio.http.inputs import json_body

blueprint = Blueprint("conversations", __name__)
PATH = "/conversations"
CONVERSATION_ID = {"path": {"id": {"type": "integer"}}}
TURN = {"path": {"id": {"type": "integer"}, "turn": {"type": "integer"}}}
CONVERSATIONS = ("conversation", PATH)  # what a path id names, and where they are listed


@blueprint.get(PATH)
@operation(Reply(200, "The conversations", Conversations), 422, query=ConversationsQuery)
async def list_conversations() -> Conversations:
    """The conversations, latest begun first, without their turns

    Filter by channel, role and the span they were active in; page with ?before=. The order
    is stable: a conversation continued while paging stays on its page.
    Kept CONVERSATION_RETENTION_DAYS. Who asked is shown only as a hash."""
    query = read_query(ConversationsQuery, request.args)
    listing = functools.partial(
        conversations.list_conversations, limit=query.limit, before=query.before or None
    )
    found = await service().database.run(functools.partial(listing, **query.filters()))
    next_before = found[-1]["id"] if len(found) == query.limit else None
    return converter.structure({"conversations": found, "next_before": next_before}, Conversations)


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The conversation, with its turns", Conversation), 404, **CONVERSATION_ID)
async def get_conversation(id: str) -> Conversation:
    """One conversation with all its turns: questions, answers, citations, timings"""
    found = await service().database.run(
        conversations.get_conversation, path_id(id, *CONVERSATIONS)
    )
    if found is None:
        raise no_such(id, *CONVERSATIONS)
    return converter.structure(found, Conversation)


@blueprint.post(f"{PATH}/<id>/turns/<turn>/feedback")
@operation(Reply(204, "Rated"), 404, 422, body=TurnFeedback, **TURN)
async def rate_turn(id: str, turn: str) -> tuple[str, int]:
    """Rate a turn's answer up or down, or take the rating back

    The rating shows on the turn in GET /conversations/{id}; rating again replaces it, and
    null takes it back. The chat widget's visitors rate their own turns the same way."""
    conversation_id = path_id(id, *CONVERSATIONS)
    feedback = structure_body(await json_body(required=True), TurnFeedback)
    number = turn_number(turn)
    svc = service()
    if number is not None and await svc.database.run(
        conversations.set_feedback, conversation_id, number, feedback.rating, svc.clock.now()
    ):
        return "", 204
    if not await svc.database.run(conversations.has_conversation, conversation_id):
        raise no_such(id, *CONVERSATIONS)
    raise ProblemError(
        404, f"no turn {turn[:40]!r} in conversation {id}; GET {PATH}/{id} lists its turns"
    )
