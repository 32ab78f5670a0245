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
    ModeChange,
    ModeChanged,
    PersonMessageBody,
    PersonMessageSent,
    TurnFeedback,
    turn_number,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.channels.person import NoConversation, Refused, owner_move, person_message
from ragcore.converter import converter, structure_body
from ragio.chat import conversations
from ragio.chat.feedback import rate
from ragio.handoff import store as handoff_store
from ragio.http.access import conversations_key
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.runner import run

blueprint = Blueprint("conversations", __name__)
PATH = "/conversations"
CONVERSATION_ID = {"path": {"id": {"type": "integer"}}}
TURN = {"path": {"id": {"type": "integer"}, "turn": {"type": "integer"}}}
CONVERSATIONS = ("conversation", PATH)  # what a path id names, and where they are listed


async def _theirs(raw: str, conversation_id: int) -> None:
    """A chat key sees only the conversations asked with it: another is a 404, as one
    that does not exist."""
    own = conversations_key()
    if own is not None and not await service().database.run(
        conversations.has_conversation, conversation_id, own
    ):
        raise no_such(raw, *CONVERSATIONS)


@blueprint.get(PATH)
@operation(Reply(200, "The conversations", Conversations), 422, query=ConversationsQuery)
async def list_conversations() -> Conversations:
    """The conversations, latest begun first, without their turns

    Filter by channel, role, mode (human: the inbox) and the span they were active in;
    find them by what was asked or answered with ?q=; page with ?before=. The order
    is stable: a conversation continued while paging stays on its page; total counts
    the matching ones on all pages.
    Kept CONVERSATION_RETENTION_DAYS. Who asked is shown only as a hash."""
    query = read_query(ConversationsQuery, request.args)
    svc = service()
    filters = query.filters()
    if filters["mode"] is not None:  # those nobody wrote in for long are the AI's again
        idle = svc.settings.handoff_idle_minutes
        await svc.database.run(handoff_store.end_idle, svc.clock.now(), idle)
    listing = functools.partial(
        conversations.list_conversations,
        limit=query.limit,
        before=query.before or None,
        api_key_id=conversations_key(),
    )
    found, total = await svc.database.run(functools.partial(listing, **filters))
    next_before = found[-1]["id"] if len(found) == query.limit else None
    return converter.structure(
        {"conversations": found, "total": total, "next_before": next_before}, Conversations
    )


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The conversation, with its turns", Conversation), 404, **CONVERSATION_ID)
async def get_conversation(id: str) -> Conversation:
    """One conversation with all its turns: questions, answers, citations, timings"""
    svc = service()
    conversation_id = path_id(id, *CONVERSATIONS)
    await _theirs(id, conversation_id)
    found = await svc.database.run(conversations.get_conversation, conversation_id)
    if found is None:
        raise no_such(id, *CONVERSATIONS)
    return converter.structure(found, Conversation)


@blueprint.post(f"{PATH}/<id>/turns/<turn>/feedback")
@operation(Reply(204, "Rated"), 404, 422, body=TurnFeedback, **TURN)
async def rate_turn(id: str, turn: str) -> tuple[str, int]:
    """Rate a turn's answer up or down, with an optional comment, or take the rating back

    The rating and its comment show on the turn in GET /conversations/{id}; rating again
    replaces both, and null takes them back (a comment with null is refused). The chat
    widget's visitors rate their own turns the same way."""
    conversation_id = path_id(id, *CONVERSATIONS)
    await _theirs(id, conversation_id)
    feedback = structure_body(await json_body(required=True), TurnFeedback)
    number = turn_number(turn)
    svc = service()
    if number is not None and await rate(
        svc, conversation_id, number, feedback.rating, feedback.comment
    ):
        return "", 204
    if not await svc.database.run(conversations.has_conversation, conversation_id):
        raise no_such(id, *CONVERSATIONS)
    raise ProblemError(
        404, f"no turn {turn[:40]!r} in conversation {id}; GET {PATH}/{id} lists its turns"
    )


@blueprint.post(f"{PATH}/<id>/messages")
@operation(
    Reply(201, "Recorded, and delivered unless delivered is false", PersonMessageSent),
    404, 409, 422,
    body=PersonMessageBody,
    **CONVERSATION_ID,
)  # fmt: skip
async def write_to_customer(id: str) -> tuple[PersonMessageSent, int]:
    """A person's message to the customer, on their channel

    A conversation the AI still answers is taken over first (the AI stays silent until it
    is handed back). 409 when it is closed, or on the phone (call the customer back)."""
    conversation_id = path_id(id, *CONVERSATIONS)
    body = structure_body(await json_body(required=True), PersonMessageBody)
    svc = service()
    try:
        sent = await run(
            person_message(conversation_id, body.text, "console", svc.clock.now()), svc
        )
    except NoConversation:
        raise no_such(id, *CONVERSATIONS) from None
    except Refused as refused:
        raise ProblemError(409, str(refused), title="Cannot write to this conversation") from None
    return PersonMessageSent(
        sent.conversation_id, sent.turn, sent.delivered, sent.detail, "human"
    ), 201


@blueprint.post(f"{PATH}/<id>/mode")
@operation(Reply(200, "Moved", ModeChanged), 404, 409, 422, body=ModeChange, **CONVERSATION_ID)
async def move_conversation(id: str) -> ModeChanged:
    """Take a conversation over (human), hand it back to the AI (ai) or close it

    Each move is in the conversation's handoff_log. A closed conversation stays closed
    (409): the customer's next message begins a new one."""
    conversation_id = path_id(id, *CONVERSATIONS)
    body = structure_body(await json_body(required=True), ModeChange)
    svc = service()
    try:
        mode = await run(owner_move(conversation_id, body.mode, "console", body.reason), svc)
    except NoConversation:
        raise no_such(id, *CONVERSATIONS) from None
    except Refused as refused:
        raise ProblemError(409, str(refused), title="Cannot move this conversation") from None
    return ModeChanged(conversation_id, mode)  # type: ignore[arg-type]
