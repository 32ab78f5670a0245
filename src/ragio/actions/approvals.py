"""The owner's YES/NO: from a channel message (``handle_owner_reply``) or the API
(``decide``). The rules are ``ragcore.actions.approvals``; the pipeline is
``ragcore.actions.flow.decide_action``."""

from __future__ import annotations

import logging
from datetime import datetime

from ragcore.actions.approvals import (
    BAD_ID_REPLY,
    decision_reply,
    parse_command,
    same_sender,
)
from ragcore.actions.flow import Decision, decide_action, result_text
from ragio.actions import store
from ragio.runner import run
from ragio.service import Service

log = logging.getLogger(__name__)


async def decide(
    service: Service, raw_id: str, verdict: str, by: str, now: datetime | None = None
) -> Decision:
    """Approve (the action is sent) or reject the held action ``raw_id`` as ``by``."""
    at = now if now is not None else service.clock.now()
    return await run(decide_action(raw_id, verdict, by, at), service)


async def handle_owner_reply(
    service: Service, channel: str, sender: str, text: str, *, now: datetime | None = None
) -> str | None:
    """The reply to send when ``text`` is the approval owner's ``YES <id>`` / ``NO <id>``;
    None when it is not an approval command from the owner, so the caller hands the
    message to the chat pipeline as any other message.

    A command from anyone but the sender matching ``approval_channel`` and
    ``approval_target`` is not accepted and gets None too: that sender is answered like
    any customer and learns nothing about the action (not even whether it exists). The
    attempt is written to the action's log for the owner. ``channel`` is ``telegram``,
    ``whatsapp`` or ``discord``; ``sender`` is ``InboundMessage.sender`` (the Telegram
    user id, the WhatsApp ``WaId`` or ``whatsapp:+…`` address, the Discord user id).
    """
    command = parse_command(text)
    if command is None:
        return None
    config = await service.database.run(store.load_autonomy)
    if not same_sender(config, channel, sender):
        await _note_stranger(service, channel, command.action_id, command.verdict)
        return None
    if command.action_id is None:
        return BAD_ID_REPLY
    decision = await decide(service, command.action_id, command.verdict, f"{channel} owner", now)
    return decision_reply(command.action_id, decision.judgement, result_text(decision))


async def _note_stranger(
    service: Service, channel: str, action_id: str | None, verdict: str
) -> None:
    log.info(
        "an approval-like %s message came from a sender who is not the approval owner; "
        "not accepted, passed on as an ordinary message",
        channel,
    )
    if action_id is None:
        return
    try:
        record = await service.database.run(store.load_action, action_id)
        if record is not None:
            word = "YES" if verdict == "approve" else "NO"
            detail = f"{word} from a {channel} sender who is not the approval owner; ignored"
            await service.database.run(store.note_action, action_id, "not_accepted", detail)
    except Exception:  # the log entry is a courtesy: the message goes on regardless
        log.warning("could not log a non-owner approval attempt", exc_info=True)
