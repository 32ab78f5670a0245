"""The owner's YES/NO: from a channel message (``handle_owner_reply``) or the API
(``decide``), and what time alone decides before actions are shown (``settle_stale``).
The rules are ``ragcore.actions.approvals``; the pipelines ``ragcore.actions.flow``."""

from __future__ import annotations

import logging

from ragcore.actions.flow import Decision, decide_action, owner_reply, settle_stale
from ragio.runner import run
from ragio.service import Service

log = logging.getLogger(__name__)


async def decide(service: Service, raw_id: str, verdict: str, by: str) -> Decision:
    """Approve (the action is sent) or reject the held action ``raw_id`` as ``by``."""
    return await run(decide_action(raw_id, verdict, by, service.clock.now()), service)


async def handle_owner_reply(service: Service, channel: str, sender: str, text: str) -> str | None:
    """The reply to send when ``text`` is the approval owner's ``YES <id>`` / ``NO <id>``;
    None when it is not an approval command from the owner, so the caller hands the
    message to the chat pipeline as any other message (``ragcore.actions.flow.owner_reply``).
    ``channel`` is ``telegram``, ``whatsapp`` or ``discord``; ``sender`` is
    ``InboundMessage.sender`` (the Telegram user id, the WhatsApp ``WaId`` or
    ``whatsapp:+…`` address, the Discord user id)."""
    answer = await run(owner_reply(channel, sender, text, service.clock.now()), service)
    if answer.stranger:
        log.info(
            "an approval-like %s message came from a sender who is not the approval owner; "
            "not accepted, passed on as an ordinary message",
            channel,
        )
    return answer.reply


async def settle(service: Service) -> None:
    """Expire the held actions past their expiry and fail those a stop cut off."""
    timeout = service.settings.actions_timeout_seconds
    await run(settle_stale(service.clock.now(), timeout), service)
