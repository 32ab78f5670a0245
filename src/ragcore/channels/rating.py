"""Rating an answer with the buttons under it, on a text channel (Telegram: 👍 / 👎 under
each AI answer): which answers carry them, what a button says, and what a press does.

The buttons name the turn they rate: ``rate:<conversation id>:<turn>:<up|down>``
(``rating_data``, at most 40 bytes; Telegram allows 64). A turn is numbered, and a new
conversation given its id, only when the turn is recorded, and a channel's reply goes out
before that (``ragcore.chat.turn.take_turn``): a number guessed when the conversation is
loaded could name another turn, as two messages of one chat answered at once are numbered
in the order they are recorded, not the order they came, and a first message has no
conversation yet. So the reply is sent without buttons and, once its turn is recorded,
its last message gets them (``OfferRating``: Telegram's editMessageReplyMarkup), naming
exactly the turn recorded whatever else happened in the chat meanwhile. An answer whose
turn could not be recorded gets none, nor does anything that is not an AI answer (a
person's message, a handoff notice, a help text, a budget's refusal: ``offers_rating``).

A press (``rate_by_button``) is taken from what the button says, which the presser's
client sends and anyone could forge: it rates the turn only when that turn is an AI
answer of the conversation taking place in the very chat the press came from
(``RateInChat``); a press naming another chat's conversation changes nothing. The press
is answered either way (the platform shows a spinner until it is), and the buttons then
show the rating chosen (``ShowRating``).
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any, TypeAlias

import attrs

from ragcore.channels.effects import AnswerPress, OfferRating, RateInChat, ShowRating
from ragcore.channels.messages import ButtonPress, InboundMessage
from ragcore.chat.history import turn_outcome
from ragcore.chat.pipeline import ChatAnswer

#: the channels whose AI answers carry rating buttons
RATED_CHANNELS = ("telegram",)
#: the ratings a button gives
RATINGS = ("up", "down")
#: what a press is answered with, as the platform shows it to the presser
THANKS = "Thanks for your feedback!"
NOT_RATED = "This answer can no longer be rated here."
NOT_RECORDED = "Sorry, your feedback could not be recorded just now."
#: a button's data at most, in bytes (Telegram's callback_data)
MAX_DATA_BYTES = 64
_DATA = re.compile(r"rate:([1-9][0-9]{0,18}):([1-9][0-9]{0,9}):(up|down)")
#: what a turn's number may be (a PostgreSQL integer), and a conversation's id
_MAX_TURN = 2**31 - 1
_MAX_CONVERSATION = 2**63 - 1

RatingEffect: TypeAlias = RateInChat | AnswerPress | ShowRating


@attrs.frozen
class Chosen:
    """What a rating button says: rate turn ``turn`` of ``conversation_id`` ``rating``."""

    conversation_id: int
    turn: int
    rating: str


@attrs.frozen
class Pressed:
    """How a press went, for the service log: whether it rated its turn, and what went
    wrong on the way (none of it stopped the rest)."""

    rated: bool = False
    failures: tuple[Exception, ...] = ()


def rating_data(conversation_id: int, turn: int, rating: str) -> str:
    """What the ``rating`` button under turn ``turn`` of ``conversation_id`` carries."""
    data = f"rate:{conversation_id}:{turn}:{rating}"
    assert rating in RATINGS and len(data.encode()) <= MAX_DATA_BYTES, data
    return data


def read_rating(data: str) -> Chosen | None:
    """What a button's ``data`` asks for; None when it is not a rating button's."""
    found = _DATA.fullmatch(data)
    if found is None:
        return None
    conversation_id, turn = int(found[1]), int(found[2])
    if conversation_id > _MAX_CONVERSATION or turn > _MAX_TURN:
        return None
    return Chosen(conversation_id, turn, found[3])


def offers_rating(channel: str, answer: ChatAnswer) -> bool:
    """Whether ``answer``, sent on ``channel``, gets rating buttons: an AI answer (answered,
    or not found in the documents) of a turn that was recorded; not a message held for a
    person, nor the notice of a handoff, nor a token budget's refusal."""
    return (
        channel in RATED_CHANNELS
        and answer.conversation_id is not None
        and answer.turn is not None
        and not answer.held
        and answer.mode == "ai"
        and turn_outcome(answer) in ("answered", "not_found")
    )


def offer_rating(
    message: InboundMessage, answer: ChatAnswer, sent: Any
) -> Generator[OfferRating, Any, None]:
    """The rating buttons under the reply to ``message`` (its messages ``sent``: the ids
    the platform gave them), when ``answer`` gets them (``offers_rating``)."""
    if not offers_rating(message.channel, answer) or not sent:
        return
    assert answer.conversation_id is not None and answer.turn is not None
    yield OfferRating(message, str(sent[-1]), answer.conversation_id, answer.turn)


def rate_by_button(press: ButtonPress) -> Generator[RatingEffect, Any, Pressed]:
    """Rate the turn ``press``'s button names, if it is an AI answer in the chat the press
    came from; answer the press (thanks, or why not); then show the rating chosen under
    the message. Never raises: a failure is in ``Pressed.failures``, and what follows it
    still happens."""
    chosen = read_rating(press.data)
    failures: list[Exception] = []
    rated, text = False, NOT_RATED
    if chosen is not None and press.conversation:
        try:
            rated = yield RateInChat(
                press.channel, press.conversation, chosen.conversation_id, chosen.turn,
                chosen.rating,
            )  # fmt: skip
            text = THANKS if rated else NOT_RATED
        except Exception as error:  # the presser is told; the log says why
            failures.append(error)
            text = NOT_RECORDED
    try:
        yield AnswerPress(press, text)
    except Exception as error:
        failures.append(error)
    if rated and chosen is not None and press.message_id is not None:
        try:
            yield ShowRating(press, chosen.conversation_id, chosen.turn, chosen.rating)
        except Exception as error:
            failures.append(error)
    return Pressed(rated, tuple(failures))
