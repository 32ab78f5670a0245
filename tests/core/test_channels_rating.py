"""Rating an answer with the buttons under it (ragcore.channels.rating, Telegram's inline
keyboard): only a recorded AI answer gets them, once its turn is recorded, naming exactly
that turn within Telegram's 64 bytes; a press rates only in the chat it came from, is
answered either way, and then shows the rating chosen. Telegram's callback_query is read
into a ButtonPress."""

from __future__ import annotations

import json

import attrs
import pytest

from ragcore.channels import telegram
from ragcore.channels.conversation import converse
from ragcore.channels.effects import (
    AnswerPress,
    MarkAnswered,
    OfferRating,
    RateInChat,
    SendReply,
    ShowRating,
)
from ragcore.channels.messages import BadShape, ButtonPress, Ignored
from ragcore.channels.rating import (
    MAX_DATA_BYTES,
    NOT_RATED,
    NOT_RECORDED,
    THANKS,
    Chosen,
    offers_rating,
    rate_by_button,
    rating_data,
    read_rating,
)
from ragcore.chat.history import RecordedTurn, RecordTurn
from ragcore.chat.pipeline import ChatAnswer
from ragcore.language import not_found
from tests.core.drive import drive
from tests.core.test_autonomy import NOW
from tests.core.test_channels_conversation import QUESTION, world
from tests.core.test_chat_pipeline import POLICY

BIGGEST = (2**63 - 1, 2**31 - 1)  # a conversation's id and a turn's number at most
ANSWER = ChatAnswer("Within 30 days [1].", (), "support", "recorded", "m1", turn=3,
                    conversation_id=12)  # fmt: skip
PRESS = ButtonPress("telegram", "9001", "4382", "42", 1001, rating_data(12, 3, "down"), "7")


# ---------------------------------------------------------------- what a button says


@pytest.mark.parametrize("rating", ["up", "down"])
def test_a_button_names_its_turn_within_telegrams_64_bytes(rating):
    data = rating_data(*BIGGEST, rating)
    assert len(data.encode()) <= MAX_DATA_BYTES
    assert read_rating(data) == Chosen(*BIGGEST, rating)
    assert read_rating(rating_data(12, 3, rating)) == Chosen(12, 3, rating)


@pytest.mark.parametrize(
    "data",
    [
        "",
        "hello",
        "rate:12:3:sideways",
        "rate:12:3:Up",
        "rate:0:3:up",
        "rate:12:0:up",
        "rate:012:3:up",
        "rate:-1:3:up",
        "rate:12:3:up:more",
        f"rate:{2**63}:3:up",
        f"rate:12:{2**31}:up",
        "rate:١٢:3:up",
    ],
)
def test_anything_else_a_client_sends_names_no_turn(data):
    assert read_rating(data) is None


def test_the_keyboard_has_thumbs_up_and_down_the_chosen_one_marked():
    [row] = telegram.rating_keyboard(12, 3)["inline_keyboard"]
    assert [(b["text"], read_rating(b["callback_data"])) for b in row] == [
        ("👍", Chosen(12, 3, "up")),
        ("👎", Chosen(12, 3, "down")),
    ]
    [chosen] = telegram.rating_keyboard(12, 3, "down")["inline_keyboard"]
    assert [b["text"] for b in chosen] == ["👍", "👎 ✓"]
    assert telegram.edit_markup_body("42", "1001", {"inline_keyboard": []}) == {
        "chat_id": 42,
        "message_id": 1001,
        "reply_markup": {"inline_keyboard": []},
    }
    assert telegram.answer_press_body("4382", "x" * 300)["text"] == "x" * 200


def test_the_webhook_asks_for_button_presses_too():
    assert telegram.set_webhook_body("https://x", "s")["allowed_updates"] == [
        "message",
        "callback_query",
    ]


# ---------------------------------------------------------------- Telegram's press


def callback(**query) -> bytes:
    base = {
        "id": "4382",
        "from": {"id": 7, "is_bot": False, "first_name": "Ada"},
        "message": {"message_id": 1001, "date": 1_700_000_000, "chat": {"id": 42}},
        "chat_instance": "-5",
        "data": "rate:12:3:down",
    }
    return json.dumps({"update_id": 9001, "callback_query": {**base, **query}}).encode()


def test_a_button_press_is_read_with_its_chat_and_message():
    assert telegram.parse_update(callback()) == PRESS


def test_a_press_under_a_message_too_old_to_show_still_names_its_chat():
    old = {"message_id": 1001, "date": 0, "chat": {"id": 42, "type": "private"}}
    assert telegram.parse_update(callback(message=old)) == PRESS


def test_a_press_under_an_inline_message_names_no_chat():
    pressed = telegram.parse_update(callback(message=None, inline_message_id="AAx"))
    assert isinstance(pressed, ButtonPress)
    assert (pressed.conversation, pressed.message_id) == ("", None)


def test_a_games_press_has_no_data_and_is_ignored():
    assert isinstance(telegram.parse_update(callback(data=None)), Ignored)


@pytest.mark.parametrize("query", [{"id": 5}, {"id": ""}])
def test_a_press_without_an_id_is_a_bad_shape(query):
    with pytest.raises(BadShape):
        telegram.parse_update(callback(**query))


# ---------------------------------------------------------------- which answers get them


def test_a_recorded_ai_answer_gets_buttons_on_telegram_only():
    assert offers_rating("telegram", ANSWER)
    refusal = attrs.evolve(ANSWER, answer=not_found("en"), provider=None, language="en")
    assert offers_rating("telegram", refusal)  # not found: a gap the owner wants to hear of
    assert not offers_rating("whatsapp", ANSWER)
    assert not offers_rating("discord", ANSWER)


@pytest.mark.parametrize(
    "change",
    [
        {"turn": None},  # not recorded
        {"conversation_id": None},
        {"mode": "human"},  # the notice of a handoff
        {"held": True, "answer": "", "mode": "human"},  # a message waiting for a person
        {"limited": True},  # a token budget's refusal
    ],
)
def test_anything_but_a_recorded_ai_answer_gets_none(change):
    assert not offers_rating("telegram", attrs.evolve(ANSWER, **change))


# ---------------------------------------------------------------- the buttons, once recorded


def test_the_buttons_go_under_the_reply_once_its_turn_is_recorded_naming_that_turn():
    base = world()

    def answer(effect):
        match effect:
            case SendReply():
                return ("1001", "1002")  # a reply in two parts
            case RecordTurn():
                return RecordedTurn(12, 3)
            case OfferRating():
                return None
        return base(effect)

    handled, effects = drive(converse(QUESTION, POLICY, NOW), answer)
    kinds = [type(e) for e in effects]
    [offer] = [e for e in effects if isinstance(e, OfferRating)]
    assert offer == OfferRating(QUESTION, "1002", 12, 3)  # under the last part
    assert kinds.index(RecordTurn) < kinds.index(OfferRating) < kinds.index(MarkAnswered)
    assert handled.failures == () and handled.answer.turn == 3


def test_an_answer_whose_turn_was_not_recorded_gets_no_buttons():
    base = world()

    def answer(effect):
        match effect:
            case SendReply():
                return ("1001",)
            case RecordTurn():
                raise RuntimeError("the database is down")
        return base(effect)

    handled, effects = drive(converse(QUESTION, POLICY, NOW), answer)
    assert not any(isinstance(e, OfferRating) for e in effects)
    assert [str(f) for f in handled.failures] == ["the database is down"]


def test_buttons_that_could_not_be_added_leave_the_answer_and_its_workflows():
    base = world()

    def answer(effect):
        match effect:
            case SendReply():
                return ("1001",)
            case OfferRating():
                raise RuntimeError("telegram: HTTP 400")
        return base(effect)

    handled, effects = drive(converse(QUESTION, POLICY, NOW), answer)
    assert handled.answer is not None and [str(f) for f in handled.failures] == [
        "telegram: HTTP 400"
    ]
    assert effects[-2] == MarkAnswered(QUESTION)  # then the workflows, as ever


# ---------------------------------------------------------------- a press


def pressed(rated=True, fails=()):
    def answer(effect):
        if type(effect) in fails:
            raise RuntimeError(f"{type(effect).__name__} failed")
        return rated if isinstance(effect, RateInChat) else None

    return answer


def test_a_press_rates_in_its_chat_is_thanked_then_shows_the_rating():
    outcome, effects = drive(rate_by_button(PRESS), pressed())
    assert effects == [
        RateInChat("telegram", "42", 12, 3, "down"),
        AnswerPress(PRESS, THANKS),
        ShowRating(PRESS, 12, 3, "down"),
    ]
    assert outcome.rated and outcome.failures == ()


def test_a_press_the_chat_has_no_such_answer_for_is_answered_and_changes_nothing_shown():
    outcome, effects = drive(rate_by_button(PRESS), pressed(rated=False))
    assert effects == [RateInChat("telegram", "42", 12, 3, "down"), AnswerPress(PRESS, NOT_RATED)]
    assert not outcome.rated


@pytest.mark.parametrize(
    "press",
    [
        attrs.evolve(PRESS, data="rate:12:3:sideways"),
        attrs.evolve(PRESS, data="hello"),
        attrs.evolve(PRESS, conversation="", message_id=None),  # no chat to rate in
    ],
)
def test_a_press_naming_no_turn_or_no_chat_rates_nothing_and_is_answered(press):
    outcome, effects = drive(rate_by_button(press), pressed())
    assert effects == [AnswerPress(press, NOT_RATED)]
    assert not outcome.rated


def test_a_rating_that_could_not_be_stored_is_said_and_reported():
    outcome, effects = drive(rate_by_button(PRESS), pressed(fails=(RateInChat,)))
    assert effects[-1] == AnswerPress(PRESS, NOT_RECORDED)
    assert [str(f) for f in outcome.failures] == ["RateInChat failed"]


def test_a_press_that_could_not_be_answered_still_shows_the_rating():
    outcome, effects = drive(rate_by_button(PRESS), pressed(fails=(AnswerPress,)))
    assert effects[-1] == ShowRating(PRESS, 12, 3, "down")
    assert outcome.rated and [str(f) for f in outcome.failures] == ["AnswerPress failed"]
