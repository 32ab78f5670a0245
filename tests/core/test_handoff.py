"""Human handoff's rules (docs/handoff.md), with no server: who asks for a person in the
seven languages, opening hours, what the customer is told, and a customer's turn driven
with recorded effect results — handed over, silent while a person answers, back to the
AI after the idle time; a person's message and the owner's reply in their chat."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs
import pytest

from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.effects import LoadAutonomy
from ragcore.channels.person import (
    NoConversation,
    Refused,
    owner_move,
    owner_reply_in_chat,
    person_message,
)
from ragcore.channels.telegram import parse_update
from ragcore.chat.history import LoadConversation, Ongoing, RecordedTurn, RecordTurn, place_key
from ragcore.chat.pipeline import ChatRequest
from ragcore.chat.turn import TurnRequest, take_turn
from ragcore.employees.hours import check_hours, is_open, parse_hours
from ragcore.errors import InvalidInput
from ragcore.generation import Generate
from ragcore.handoff.asking import asks_for_person
from ragcore.handoff.effects import (
    Delivered,
    DeliverToCustomer,
    FindNotified,
    HandoffConversation,
    LoadBusiness,
    LoadHandoff,
    LogRefused,
    MoveMode,
    NotifyOwnerOfHandoff,
    PersonReplied,
)
from ragcore.handoff.notices import Business, handoff_notice, owner_notification
from ragcore.handoff.notices import Exchange as Said
from ragcore.knowledge.effects import SearchChunks
from tests.core.drive import drive
from tests.core.test_autonomy import NOW
from tests.core.test_chat_pipeline import POLICY, recorded

ASKING = {
    "en": [
        "Can I talk to a human?",
        "I'd like a real person please",
        "agent",
        "connect me to an agent",
        "I need human help",
        "Let me speak to a manager",
    ],
    "de": [
        "Ich möchte mit einem Mitarbeiter sprechen",
        "Kann ich bitte mit einem Menschen reden?",
        "Kann ich einen Mitarbeiter sprechen?",
    ],
    "fr": ["Je veux parler à un conseiller", "Je voudrais parler avec quelqu'un"],
    "es": ["Quiero hablar con una persona", "pásame con un asesor"],
    "it": ["Vorrei parlare con un operatore", "Posso parlare con una persona vera?"],
    "nl": ["Ik wil met een medewerker spreken", "Mag ik een medewerker", "Ik wil een mens spreken"],
    "pt": ["Quero falar com um atendente", "Posso falar com uma pessoa real?"],
}
NOT_ASKING = [
    "Can I get a staff discount?",
    "How many people work there?",
    "What does an agent cost?",
    "I need someone to fix my sink",
    "Tell me about your human resources policy",
    "Wie viele Mitarbeiter haben Sie?",
    "Quel est le prix pour une personne ?",
    "¿Cuánto cuesta por persona?",
    "Qual è il prezzo per persona?",
    "Hoeveel medewerkers werken er?",
    "Quanto custa por pessoa?",
    "I need help with my order",
    "Can I get support for my e-bike?",
]


@pytest.mark.parametrize(
    ("language", "text"), [(lang, text) for lang, texts in ASKING.items() for text in texts]
)
def test_a_customer_asking_for_a_person_is_read_in_their_language(language, text):
    assert asks_for_person(text) == language


@pytest.mark.parametrize("text", NOT_ASKING)
def test_a_question_about_people_is_not_asking_for_one(text):
    assert asks_for_person(text) is None


def test_opening_hours_are_read_and_judged_on_the_business_wall_clock():
    hours = parse_hours("Mon-Fri 09:00-17:00; sat 10-14\nSun 22:00-02:00")
    friday_morning, saturday_evening = datetime(2026, 11, 27, 10), datetime(2026, 11, 28, 18)
    assert is_open(hours, friday_morning) and not is_open(hours, saturday_evening)
    assert is_open(hours, datetime(2026, 11, 30, 1, 30))  # Sunday's span runs past midnight
    assert not is_open(hours, datetime(2026, 11, 27, 17, 0))  # closing time is closed
    assert not parse_hours("").known


@pytest.mark.parametrize("text", ["whenever", "Mon 25:00-26:00", "Mon-Fri", "9-17", "Xyz 9-17"])
def test_opening_hours_that_are_not_hours_are_refused_naming_the_field(text):
    with pytest.raises(InvalidInput) as refused:
        check_hours(text)
    assert refused.value.field == "opening_hours"


def test_the_customer_is_told_who_will_reply_and_when_the_business_opens():
    shop = Business("Acme Shoes", "Mon-Fri 09:00-17:00", datetime(2026, 11, 28, 18))
    assert handoff_notice("de", attrs.evolve(shop, opening_hours="")) == (
        "Eine Person von Acme Shoes antwortet Ihnen hier."
    )
    closed = handoff_notice("en", shop)
    assert closed == (
        "A person from Acme Shoes will reply here. We are closed right now; our opening "
        "hours: Mon-Fri 09:00-17:00."
    )
    assert "closed" not in handoff_notice(
        "en", attrs.evolve(shop, local_now=datetime(2026, 11, 27, 10))
    )
    assert handoff_notice("xx", Business()) == "A person from our team will reply here."
    assert "put you through" in handoff_notice("en", shop, phone=True, transfer=True)
    assert "leave your message" in handoff_notice("en", shop, phone=True)


def test_the_owner_notification_shows_the_last_messages_and_the_link():
    said = [Said("customer", "Where is my parcel?"), Said("ai", "I could not find that.")]
    text = owner_notification(7, "telegram", "the customer asked", said, "https://x/#/inbox/7")
    assert text.splitlines()[:3] == [
        "A customer on telegram needs a person (the customer asked). Conversation 7:",
        "Customer: Where is my parcel?",
        "AI: I could not find that.",
    ]
    assert "https://x/#/inbox/7" in text


# ---------------------------------------------------------------- a customer's turn

PLACE = place_key("telegram", "42")


def customer_world(ongoing=None, moved=True, hits=None):
    chat = recorded() if hits is None else recorded(hits=hits)

    def answer(effect):
        match effect:
            case LoadConversation():
                return ongoing or Ongoing(None, (), NOW)
            case RecordTurn():
                return RecordedTurn(5, 2)
            case MoveMode():
                return moved
            case LoadBusiness():
                return Business("Acme")
            case NotifyOwnerOfHandoff():
                return None
        return chat(effect)

    return answer


def customer_turn(question: str) -> TurnRequest:
    request = ChatRequest(question)
    return TurnRequest(request, "telegram", "42", place=PLACE, reply_to={"conversation": "42"})


def test_asking_for_a_person_hands_over_without_asking_the_model_and_tells_the_owner():
    outcome, effects = drive(take_turn(customer_turn("human please"), POLICY), customer_world())
    assert not any(isinstance(e, Generate | SearchChunks) for e in effects)
    assert outcome.answer.answer == "A person from Acme will reply here."
    assert (outcome.answer.mode, outcome.answer.held) == ("human", False)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert (record.outcome, record.author, record.reply_to) == (
        "handed_off",
        "ai",
        {"conversation": "42"},
    )
    moves = [e for e in effects if isinstance(e, MoveMode | NotifyOwnerOfHandoff)]
    assert moves == [
        MoveMode(5, "human", "customer", "the customer asked for a person", ("ai",)),
        NotifyOwnerOfHandoff(5, "telegram", "the customer asked for a person"),
    ]


def test_while_a_person_answers_the_ai_is_silent_and_the_message_is_passed_on():
    ongoing = Ongoing(5, (), NOW, mode="human", last_message_at=NOW - timedelta(minutes=5))
    turn = customer_turn("Where is my parcel?")
    outcome, effects = drive(take_turn(turn, POLICY), customer_world(ongoing))
    assert not any(isinstance(e, Generate | SearchChunks) for e in effects)
    assert (outcome.answer.answer, outcome.answer.held) == ("", True)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert (record.author, record.outcome, record.question) == (
        "customer",
        "to_person",
        "Where is my parcel?",
    )
    assert effects[-1] == NotifyOwnerOfHandoff(5, "telegram", message="Where is my parcel?")


def test_after_the_idle_time_the_ai_answers_again_and_the_move_is_the_timeout():
    idle = Ongoing(5, (), NOW, mode="human", last_message_at=NOW - timedelta(minutes=60))
    outcome, effects = drive(take_turn(customer_turn("Returns?"), POLICY), customer_world(idle))
    assert effects[1] == MoveMode(5, "ai", "timeout", "nobody wrote for 60 minutes", ("human",))
    assert any(isinstance(e, Generate) for e in effects)
    assert outcome.answer.answer == "Within 30 days [1]." and outcome.answer.mode == "ai"


def test_the_second_refusal_in_a_row_hands_over_with_the_refusal_and_the_notice():
    once = Ongoing(5, (), NOW, refusals=1)
    outcome, effects = drive(
        take_turn(customer_turn("Do you sell boats?"), POLICY), customer_world(once, hits=[])
    )
    assert outcome.answer.mode == "human"
    assert outcome.answer.answer.endswith("A person from Acme will reply here.")
    assert (
        MoveMode(5, "human", "rule", "the AI found no answer 2 times in a row", ("ai",)) in effects
    )
    first = Ongoing(5, (), NOW, refusals=0)
    outcome, effects = drive(
        take_turn(customer_turn("Do you sell boats?"), POLICY), customer_world(first, hits=[])
    )
    assert outcome.answer.mode == "ai" and not any(isinstance(e, MoveMode) for e in effects)


def test_the_owners_own_api_never_hands_over():
    turn = TurnRequest(ChatRequest("human please"), "chat", "user-1")
    outcome, effects = drive(take_turn(turn, POLICY), customer_world())
    assert any(isinstance(e, Generate) for e in effects) and outcome.answer.mode == "ai"


# ---------------------------------------------------------------- a person writes


def person_world(found, delivered=Delivered(True, "sent on telegram"), autonomy=None):
    def answer(effect):
        match effect:
            case LoadHandoff():
                return found
            case MoveMode() | LogRefused() | PersonReplied():
                return True
            case DeliverToCustomer():
                return delivered
            case RecordTurn():
                return RecordedTurn(5, 4)
            case FindNotified():
                return 5 if effect.message_id == "1001" else None
            case LoadAutonomy():
                return autonomy
        raise AssertionError(effect)

    return answer


WAITING = HandoffConversation(5, "telegram", "human", {"conversation": "42"}, NOW)


def test_a_persons_message_is_delivered_recorded_and_its_wait_measured():
    later = NOW + timedelta(minutes=3)
    sent, effects = drive(
        person_message(5, " On its way! ", "console", later), person_world(WAITING)
    )
    assert DeliverToCustomer("telegram", {"conversation": "42"}, ("On its way!",)) in effects
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert (record.author, record.person, record.answer, record.outcome) == (
        "person",
        "console",
        "On its way!",
        "sent",
    )
    assert (sent.turn, sent.delivered, sent.first_reply_seconds) == (4, True, 180.0)
    assert PersonReplied("telegram", 180.0) in effects


def test_writing_into_a_conversation_of_the_ai_takes_it_over_first():
    found = attrs.evolve(WAITING, mode="ai", handed_at=None)
    _, effects = drive(person_message(5, "Hello", "console", NOW), person_world(found))
    assert effects[1] == MoveMode(5, "human", "console", "console wrote to the customer", ("ai",))


@pytest.mark.parametrize(
    ("found", "why"),
    [
        (attrs.evolve(WAITING, mode="closed"), "closed"),
        (attrs.evolve(WAITING, channel="voice"), "call the customer back"),
    ],
)
def test_a_closed_or_spoken_conversation_refuses_a_message_with_the_reason(found, why):
    with pytest.raises(Refused, match=why):
        drive(person_message(5, "Hello", "console", NOW), person_world(found))
    with pytest.raises(NoConversation):
        drive(person_message(9, "Hello", "console", NOW), person_world(None))


def test_a_closed_conversation_stays_closed():
    closed = attrs.evolve(WAITING, mode="closed")
    with pytest.raises(Refused):
        drive(owner_move(5, "ai", "console"), person_world(closed))
    mode, effects = drive(owner_move(5, "ai", "console"), person_world(WAITING))
    assert mode == "ai" and effects[-1].detail == "the owner handed back to the AI"


OWNER = AutonomyConfig(approval_channel="telegram", approval_target="9999")


def test_the_owners_reply_to_a_notification_goes_to_the_customer():
    reading = owner_reply_in_chat("telegram", "9999", "9999", "1001", "On its way", NOW)
    said, effects = drive(reading, person_world(WAITING, autonomy=OWNER))
    assert said.reply == "Sent to the customer (conversation 5)."
    assert any(isinstance(e, DeliverToCustomer) for e in effects)
    back = owner_reply_in_chat("telegram", "9999", "9999", "1001", "/ai", NOW)
    said, _ = drive(back, person_world(WAITING, autonomy=OWNER))
    assert said.reply == "Conversation 5 is now: answered by the AI."


def test_a_reply_from_anyone_else_is_refused_logged_and_passed_on_as_any_message():
    reading = owner_reply_in_chat("telegram", "9999", "5151", "1001", "I'm the owner", NOW)
    said, effects = drive(reading, person_world(WAITING, autonomy=OWNER))
    assert (said.reply, said.refused) == (None, True)
    assert not any(isinstance(e, DeliverToCustomer) for e in effects)
    assert effects[-1] == LogRefused(
        5, "telegram stranger", "a reply from a telegram sender who is not the owner was refused"
    )
    other = owner_reply_in_chat("telegram", "9999", "9999", "555", "hello", NOW)
    assert drive(other, person_world(WAITING, autonomy=OWNER))[0].reply is None


def test_telegram_reads_which_message_a_reply_answers():
    body = (
        b'{"update_id": 1, "message": {"message_id": 2, "date": 1, "text": "ok",'
        b' "chat": {"id": 9999, "type": "private"}, "from": {"id": 9999},'
        b' "reply_to_message": {"message_id": 1001, "date": 1, "chat": {"id": 9999}}}}'
    )
    assert parse_update(body).reply_via == {"message_id": 2, "replied_to": 1001}
