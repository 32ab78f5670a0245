"""What every channel's webhook is read into, and how a verification turns out.

A platform module turns its own update shape into one of its outcomes:
``InboundMessage`` (someone wrote to us: answer it), ``ButtonPress`` (someone pressed a
button under one of our messages: a rating, ``ragcore.channels.rating``), ``Ignored`` (a
valid update with nothing to answer, such as a delivery receipt) or ``BadShape`` raised
(not the platform's shape at all: a 400 once the signature has passed).
"""

from __future__ import annotations

from typing import Any

import attrs

from ragcore.inputs import NotJSON, parse_json


class BadShape(ValueError):
    """The body is not the platform's update shape; the message says what is wrong."""


@attrs.frozen
class Verification:
    """The outcome of a webhook's signature or secret check.

    ``accepted`` with ``signed`` False means the request was let in without a valid
    signature because the owner allowed unsigned requests (local testing only).
    ``reason`` says why a request was refused, without echoing any secret.
    """

    accepted: bool
    signed: bool = False
    reason: str = ""

    @classmethod
    def ok(cls) -> Verification:
        return cls(True, True)

    @classmethod
    def unsigned(cls, reason: str) -> Verification:
        return cls(True, False, reason)

    @classmethod
    def refused(cls, reason: str) -> Verification:
        return cls(False, False, reason)


@attrs.frozen
class InboundMessage:
    """A message from a customer on a channel, in the terms every channel shares.

    ``delivery_id`` is the platform's id of this delivery (Telegram ``update_id``, the
    telephony provider's ``MessageSid``, the Discord interaction id): the same delivery
    twice is answered once. ``conversation`` is where the reply goes (a chat id, a phone
    address); ``reply_via`` holds what the sender needs beyond it (the number replied
    from, the message replied to, the interaction's token). ``kind`` is ``text``, or
    the name of a message kind the service does not read (``sticker``, ``photo`` …),
    which gets a polite reply instead of an answer (``empty``, nothing to answer, gets
    the help text). ``requested_role`` is a role the customer asked for explicitly (a
    Discord option); a ``/role`` prefix in the text is read by
    ``ragcore.channels.routing``.
    """

    channel: str
    delivery_id: str
    conversation: str
    text: str
    kind: str = "text"
    sender: str = ""
    sender_name: str = ""
    requested_role: str | None = None
    reply_via: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def readable(self) -> bool:
        return self.kind == "text"


@attrs.frozen
class ButtonPress:
    """A button pressed under one of our messages (Telegram's ``callback_query``).

    ``press_id`` is what answering the press names (the spinner on the button stops then);
    ``conversation`` is the chat the pressed message is in, as the platform says it (blank
    when it does not: a message too old to be shown), ``message_id`` that message;
    ``data`` is what the button carries (``ragcore.channels.rating.rating_data``), as the
    presser's client sent it: anything, until checked against the chat."""

    channel: str
    delivery_id: str
    press_id: str
    conversation: str
    message_id: int | None
    data: str
    sender: str = ""


@attrs.frozen
class Ignored:
    """A valid update with nothing to answer (an edit, a delivery receipt, a bot's post)."""

    reason: str


UNREADABLE_REPLY = (
    "Sorry, I can't read {what} yet. I understand text messages: please type your "
    "question and I'll answer it from our documents."
)
FAILED_REPLY = "Sorry, I couldn't answer that just now. Please try again in a few minutes."


def unreadable_reply(kind: str) -> str:
    """The polite reply to a message kind the service does not read."""
    what = {
        "photo": "photos",
        "image": "images",
        "sticker": "stickers",
        "voice": "voice messages",
        "audio": "audio messages",
        "video": "videos",
        "video_note": "video messages",
        "animation": "GIFs",
        "document": "files",
        "location": "locations",
        "venue": "locations",
        "contact": "contact cards",
        "poll": "polls",
        "dice": "dice",
        "game": "games",
        "media": "attachments",
        "command": "that command",
    }.get(kind, "that kind of message")
    return UNREADABLE_REPLY.format(what=what)


def json_object(body: bytes, what: str) -> dict[str, Any]:
    """``body`` parsed as a JSON object; BadShape naming ``what`` it should be otherwise
    (NestedTooDeep, or InvalidInput naming a field that cannot be stored: see
    ``ragcore.inputs.parse_json``)."""
    try:
        value = parse_json(body)
    except NotJSON:
        raise BadShape("the body is not JSON") from None
    if not isinstance(value, dict):
        raise BadShape(f"the body must be a JSON object ({what})")
    return value
