"""A conversation's turn, driven with recorded effect results: the conversation loaded
the way the channel finds it, the question answered with its history, the outcome
delivered, and the turn recorded, failures too."""

from __future__ import annotations

import attrs
import pytest

from ragcore.api.problems import ProblemError
from ragcore.chat.followup import Exchange
from ragcore.chat.history import (
    LoadConversation,
    Ongoing,
    RecordedTurn,
    RecordTurn,
    continuation,
    place_key,
)
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.chat.turn import TurnRequest, take_turn
from ragcore.generation import Generate
from ragcore.live.answers import LiveContext, LoadLive
from ragcore.usage import (
    Allowed,
    Caps,
    CheckBudget,
    ReleaseTokens,
    Reservation,
    ReserveTokens,
    SettleTokens,
)
from tests.core.drive import drive
from tests.core.test_autonomy import NOW
from tests.core.test_chat_pipeline import POLICY, recorded

EARLIER = (Exchange("Do you ship to Norway?", "Yes, within 5 days [1].", None),)
QUESTION = "How long do I have to return something?"


class Down(Exception):
    """A database or provider that did not answer."""


def world(ongoing=None, load_fails=None, record_fails=False, answer_fails=False, sends=None):
    chat = recorded()

    def answer(effect):
        match effect:
            case LoadConversation():
                if load_fails is not None:
                    raise load_fails
                return ongoing or Ongoing(None, (), NOW)
            case RecordTurn():
                if record_fails:
                    raise Down("the database is gone")
                return RecordedTurn(7, 3)
            case Generate() if answer_fails:
                raise Down("the provider is gone")
            case ("sent", _):
                sends.append(effect[1])
                return None
        return chat(effect)

    return answer


def deliver_to(sends):
    def deliver(outcome):
        yield ("sent", outcome)

    return deliver


def test_a_chat_turn_is_answered_then_recorded_in_a_new_conversation():
    turn = TurnRequest(ChatRequest(QUESTION), "chat", "user-1")
    outcome, effects = drive(take_turn(turn, POLICY), world())
    assert effects[0] == LoadConversation("chat", None, 0)  # nothing to find: it begins one
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert effects[-1] == RecordTurn(record)  # recorded last, once answered
    assert (record.channel, record.conversation_id, record.outcome) == ("chat", None, "answered")
    assert (record.question, record.answer, record.participant) == (
        QUESTION,
        "Within 30 days [1].",
        "user-1",
    )
    assert record.started == NOW
    assert (outcome.answer.conversation_id, outcome.answer.turn) == (7, 3)
    assert outcome.failures == ()


def test_a_named_conversation_is_loaded_and_its_history_read_with_the_question():
    turn = TurnRequest(ChatRequest(QUESTION), "chat", conversation_id=3)
    outcome, effects = drive(take_turn(turn, POLICY), world(Ongoing(3, EARLIER, NOW)))
    assert effects[0] == LoadConversation("chat", conversation_id=3)
    prompt = next(e for e in effects if isinstance(e, Generate)).prompt
    assert "Do you ship to Norway?" in str(prompt)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert record.conversation_id == 3
    # the key it is found again by is the hash of its exchanges, this one included
    assert record.continuation == continuation(
        [*EARLIER, Exchange(QUESTION, outcome.answer.answer, None)]
    )


def test_an_unknown_named_conversation_is_raised_before_anything_is_answered():
    turn = TurnRequest(ChatRequest(QUESTION), "chat", conversation_id=99)
    missing = ProblemError(404, "no conversation 99")
    with pytest.raises(ProblemError):
        drive(take_turn(turn, POLICY), world(load_fails=missing))


def test_a_place_is_found_by_its_key_within_the_idle_time_and_keeps_that_key():
    place = place_key("telegram", "42")
    turn = TurnRequest(ChatRequest(QUESTION), "telegram", "7", place=place)
    _, effects = drive(take_turn(turn, POLICY), world(Ongoing(5, EARLIER, NOW)))
    assert effects[0] == LoadConversation("telegram", place, 30)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert (record.conversation_id, record.continuation) == (5, place)


def test_a_client_sending_its_history_continues_the_conversation_of_that_history():
    asked = ChatRequest(QUESTION, history=EARLIER)
    turn = TurnRequest(asked, "openai", "u")
    stored = (Exchange("something else", "stored", None),)
    _, effects = drive(take_turn(turn, POLICY), world(Ongoing(4, stored, NOW)))
    assert effects[0] == LoadConversation("openai", continuation(EARLIER), 0)
    prompt = str(next(e for e in effects if isinstance(e, Generate)).prompt)
    assert "Do you ship to Norway?" in prompt and "something else" not in prompt  # the client's
    assert [e.record.conversation_id for e in effects if isinstance(e, RecordTurn)] == [4]


def test_a_conversation_that_cannot_be_loaded_is_answered_without_it_and_reported():
    turn = TurnRequest(ChatRequest(QUESTION), "voice", "+15550100", place="k", idle_minutes=0)
    down = Down("the database is gone")
    outcome, effects = drive(take_turn(turn, POLICY), world(load_fails=down))
    assert outcome.answer.answer == "Within 30 days [1]." and outcome.failures == (down,)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert record.conversation_id is None and record.started is None


def test_a_turn_that_cannot_be_recorded_is_still_answered_and_reported():
    turn = TurnRequest(ChatRequest(QUESTION), "chat")
    outcome, _ = drive(take_turn(turn, POLICY), world(record_fails=True))
    assert outcome.answer.answer == "Within 30 days [1]."
    assert outcome.answer.conversation_id is None
    assert [str(f) for f in outcome.failures] == ["the database is gone"]


def test_a_failed_answer_is_delivered_recorded_as_failed_then_raised():
    sends: list[object] = []
    turn = TurnRequest(ChatRequest(QUESTION), "telegram", place="k")
    pipeline = take_turn(turn, POLICY, deliver_to(sends))
    with pytest.raises(Down, match="provider") as raised:
        drive(pipeline, world(answer_fails=True, sends=sends, record_fails=True))
    [delivered] = sends
    assert isinstance(delivered, Down)
    assert raised.value.__notes__ == ["also, on the way: Down: the database is gone"]


def test_a_failed_answer_is_recorded_with_its_question():
    turn = TurnRequest(ChatRequest(QUESTION), "chat", "u")
    effects: list = []

    def answer(effect):
        effects.append(effect)
        return world(answer_fails=True)(effect)

    with pytest.raises(Down):
        drive(take_turn(turn, POLICY), answer)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert (record.question, record.answer, record.outcome) == (QUESTION, "", "failed")


def test_the_answer_is_delivered_before_the_turn_is_recorded():
    sends: list[object] = []
    turn = TurnRequest(ChatRequest(QUESTION), "telegram", place="k")
    _, effects = drive(take_turn(turn, POLICY, deliver_to(sends)), world(sends=sends))
    [delivered] = sends
    assert isinstance(delivered, ChatAnswer)
    assert effects.index(("sent", delivered)) == len(effects) - 2
    assert isinstance(effects[-1], RecordTurn)


def test_an_answer_that_could_not_be_delivered_is_recorded_then_raised():
    def refusing(outcome):
        yield ("refused", outcome)

    answer = world()

    def refuse(effect):
        if isinstance(effect, tuple) and effect[0] == "refused":
            raise Down("the platform refused it")
        return answer(effect)

    turn = TurnRequest(ChatRequest(QUESTION), "telegram", place="k")
    effects: list = []

    def seen(effect):
        effects.append(effect)
        return refuse(effect)

    with pytest.raises(Down, match="platform"):
        drive(take_turn(turn, POLICY, refusing), seen)
    [record] = [e.record for e in effects if isinstance(e, RecordTurn)]
    assert record.outcome == "answered"


@pytest.mark.parametrize("earlier", [(), EARLIER], ids=["first", "follow-up"])
@pytest.mark.parametrize("metered", [False, True], ids=["free", "metered"])
def test_a_voice_turn_reaches_its_answer_on_effects_that_run_ahead(earlier, metered):
    """A tentative voice question (``ragcore.voice.call``) runs only the effects that run
    ahead until it is confirmed: every one up to the answer's model call must, or asking
    early gains nothing (a follow-up's rewrite, the budget's holds and settlements
    included); the turn's record waits."""
    question = "And how long does that take?" if earlier else QUESTION
    request = ChatRequest(question, spoken=True, channel="voice")
    place = place_key("voice", "CA1")
    turn = TurnRequest(request, "voice", "+15551234567", place=place, idle_minutes=0, turn=1)
    answers = world(ongoing=Ongoing(5, earlier, NOW))
    policy = attrs.evolve(POLICY, rewrite_with_model=True)
    if metered:
        policy = attrs.evolve(policy, usage_ledger=True, caps=Caps(daily=10**6))

    def answer(effect):
        match effect:
            case LoadLive():
                return LiveContext((), {}, NOW)
            case CheckBudget():
                return Allowed()
            case ReserveTokens():
                return Reservation(1, 256)
            case SettleTokens() | ReleaseTokens():
                return None
        return answers(effect)

    _, effects = drive(take_turn(turn, policy), answer)
    if metered:
        assert any(isinstance(e, SettleTokens) for e in effects)
    if earlier:
        assert sum(isinstance(e, Generate) for e in effects) >= 2  # the rewrite, the answer
    answering = max(i for i, e in enumerate(effects) if isinstance(e, Generate))
    held = [type(e).__name__ for e in effects[: answering + 1] if not e.runs_ahead]
    assert held == []
    assert not RecordTurn.runs_ahead
