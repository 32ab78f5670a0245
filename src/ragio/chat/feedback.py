"""A turn's answer rated, from wherever the rating comes (the owner's API and console, the
widget's visitor, a Telegram button): stored on the turn
(``ragio.chat.conversations.set_feedback``) and counted in ``ragchat_feedback_total`` by
the conversation's channel, each time a rating is given (a rating taken back is not)."""

from __future__ import annotations

from ragio.chat import conversations
from ragio.metrics import FEEDBACK
from ragio.service import Service


async def rate(
    service: Service,
    conversation_id: int,
    turn: int,
    rating: str | None,
    comment: str | None = None,
    place: tuple[str, str] | None = None,
) -> bool:
    """Store ``rating`` (None: taken back) and ``comment`` on the turn (``place``: only
    there, as ``set_feedback`` says); False when there is no such turn."""
    channel = await service.database.run(
        conversations.set_feedback,
        conversation_id,
        turn,
        rating,
        service.clock.now(),
        comment,
        place,
    )
    if channel is not None and rating is not None:
        FEEDBACK.labels(channel, rating).inc()
    return channel is not None
