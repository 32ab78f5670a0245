"""GET /conversations and GET /conversations/{id}: the owner reads what the service was
asked and what it answered (``ragio.chat.conversations`` records them)."""

from __future__ import annotations

import functools

from quart import Blueprint, request

from ragcore.api.conversations import Conversation, Conversations, ConversationsQuery
from ragcore.api.operations import Reply, operation
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.converter import converter
from ragio.chat import conversations
from ragio.http.context import service

blueprint = Blueprint("conversations", __name__)
PATH = "/conversations"
CONVERSATION_ID = {"path": {"id": {"type": "integer"}}}
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
