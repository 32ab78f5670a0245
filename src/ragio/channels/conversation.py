"""Answering one inbound message: ``ragcore.channels.conversation.converse`` decides,
this runs it (its effects: ``ragio.channels.handlers``) and logs how it went; and a
rating button pressed (``ragcore.channels.rating.rate_by_button``), likewise.

Runs as a background task in the app's nursery after the webhook has acknowledged the
delivery, so it must never raise. An answer cut off by a stop is not marked answered,
and is given at the next start (``ragio.channels.updates``); a press is not kept (the
presser may press again).
"""

from __future__ import annotations

import logging

from ragcore.channels.conversation import converse
from ragcore.channels.messages import ButtonPress, InboundMessage
from ragcore.channels.rating import rate_by_button
from ragio.channels.outbound import SendFailed
from ragio.chat.policy import chat_policy
from ragio.runner import run
from ragio.service import Service

log = logging.getLogger(__name__)


async def answer_message(service: Service, message: InboundMessage) -> None:
    """Reply to ``message`` on its channel and, after an AI answer, call the workflows
    tied to the channel (SPEC section 6). Never raises."""
    where = (message.channel, message.delivery_id)
    try:
        handled = await run(
            converse(message, chat_policy(service), service.clock.now()),
            service,
        )
    except Exception:  # the pipeline reports its failures; this does not trust that
        log.exception("answering %s delivery %s failed", *where)
        return
    if handled.stranger:
        log.info(
            "an approval-like %s message came from a sender who is not the approval owner; "
            "not accepted, passed on as an ordinary message",
            message.channel,
        )
    for failure in handled.failures:
        if isinstance(failure, SendFailed):
            log.warning("reply to %s delivery %s not sent: %s", *where, failure)
        else:
            log.error("answering %s delivery %s failed", *where, exc_info=failure)


async def take_press(service: Service, press: ButtonPress) -> None:
    """Rate the answer ``press``'s button names, if it may be rated from the press's
    chat, and answer the press. Never raises."""
    try:
        pressed = await run(rate_by_button(press), service)
    except Exception:  # the pipeline reports its failures; this does not trust that
        log.exception("the %s button press of delivery %s failed", press.channel, press.delivery_id)
        return
    if not pressed.rated:
        log.info(
            "a %s button press (delivery %s) rated nothing: no such answer in its chat",
            press.channel,
            press.delivery_id,
        )
    for failure in pressed.failures:
        log.error("the %s button press of delivery %s failed", press.channel,
                  press.delivery_id, exc_info=failure)  # fmt: skip
