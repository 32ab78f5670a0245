"""Answering a channel message, driven with recorded effect results: the owner's YES/NO
first, fixed replies, the chat answer for this asker and origin, then the delivery marked
answered and the workflows called with what they may know."""

from __future__ import annotations

import attrs

import ragcore.actions.effects as action_effects
from ragcore.channels.conversation import Handled, converse
from ragcore.channels.effects import FireWorkflows, LoadRoles, MarkAnswered, SendReply
from ragcore.channels.messages import FAILED_REPLY, InboundMessage
from ragcore.chat.followup import Exchange
from ragcore.chat.history import LoadConversation, Ongoing, RecordedTurn, RecordTurn, place_key
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.learning import RecordInteraction, asker_hash
from ragcore.generation import Generate
from ragcore.knowledge.effects import SearchChunks
from ragcore.live.answers import LiveContext, LoadLive
from tests.core.drive import drive
from tests.core.test_autonomy import ID, NOW, OWNER, World, config, held
from tests.core.test_chat_pipeline import POLICY, recorded

ROLES = list(BUILT_IN.values())
QUESTION = InboundMessage("telegram", "d1", "42", "How long do I have to return?", sender="7")


class SendFailed(Exception):
    """A platform that did not take a reply."""


def world(actions=None, chat=None, refuse_sends=False, ongoing=None, records=None):
    actions = actions or World(config("semi", **OWNER), record=held())
    chat = chat or recorded()
    ongoing = ongoing or Ongoing(None, (), NOW)

    def answer(effect):
        match effect:
            case SendReply():
                if refuse_sends:
                    raise SendFailed("telegram: HTTP 403: Forbidden")
                return None
            case LoadRoles():
                return ROLES
            case MarkAnswered() | FireWorkflows():
                return None
            case LoadLive():  # no live-data action configured
                return LiveContext((), {}, NOW)
            case LoadConversation():
                return ongoing
            case RecordTurn(record=record):
                if records is None:
                    return RecordedTurn(1, 1)
                records.append(record)
                return RecordedTurn(ongoing.conversation_id or 1, len(records))
            case _ if type(effect).__module__ == action_effects.__name__:
                return actions(effect)
        return chat(effect)

    return answer


def sent(effects):
    return [effect.parts for effect in effects if isinstance(effect, SendReply)]


def test_a_question_is_answered_with_citations_then_marked_and_the_workflows_called():
    handled, effects = drive(converse(QUESTION, POLICY, NOW), world())
    assert handled.answer.answer == "Within 30 days [1]." and handled.role == "support"
    assert sent(effects) == [("Within 30 days [1].\n\nSources:\n[1] refunds.md › Returns",)]
    recorded_for = next(e for e in effects if isinstance(e, RecordInteraction))
    assert recorded_for.interaction.asker_hash == asker_hash(
        "telegram:7"
    )  # one person, one channel
    mark, fire = effects[-2:]
    assert mark == MarkAnswered(QUESTION)
    assert (fire.channel, fire.message, fire.ai_reply) == (
        "telegram",
        QUESTION.text,
        "Within 30 days [1].",
    )
    assert fire.context["role"] == "support" and fire.context["sender"] == "7"
    assert fire.context["citations"][0]["document_name"] == "refunds.md"
    assert "reply_via" not in fire.context


def test_the_owners_yes_is_decided_and_answered_and_goes_no_further():
    owner_yes = attrs.evolve(QUESTION, text=f"YES {ID}", sender="4242")
    handled, effects = drive(converse(owner_yes, POLICY, NOW), world())
    assert handled == Handled()
    assert sent(effects) == [(f"Approved: action {ID} was sent.",)]
    assert not any(isinstance(e, LoadRoles | Generate | FireWorkflows) for e in effects)
    assert effects[-1] == MarkAnswered(owner_yes)


def test_a_strangers_yes_is_answered_as_a_question_and_reported():
    stranger_yes = attrs.evolve(QUESTION, text=f"YES {ID}", sender="999")
    handled, effects = drive(converse(stranger_yes, POLICY, NOW), world())
    assert handled.stranger and handled.answer is not None
    assert not any(f"{ID}" in part for parts in sent(effects) for part in parts)


def test_a_sticker_gets_a_fixed_reply_and_no_workflow():
    sticker = attrs.evolve(QUESTION, text="", kind="sticker")
    handled, effects = drive(converse(sticker, POLICY, NOW), world())
    assert handled.answer is None and len(sent(effects)) == 1
    assert not any(isinstance(e, Generate | FireWorkflows) for e in effects)
    assert effects[-1] == MarkAnswered(sticker)


def test_a_question_too_long_is_refused_saying_why():
    long = attrs.evolve(QUESTION, text="why " * 2000)
    handled, effects = drive(converse(long, POLICY, NOW), world())
    [[reply]] = sent(effects)
    assert reply.startswith("Sorry, I can't answer that: the question")
    assert handled.failures == () and effects[-1] == MarkAnswered(long)


def test_a_failed_answer_tells_the_customer_and_reports_the_failure():
    def broken(effect):
        if isinstance(effect, Generate):
            raise RuntimeError("every provider is down")
        return recorded()(effect)

    handled, effects = drive(converse(QUESTION, POLICY, NOW), world(chat=broken))
    assert sent(effects)[-1] == (FAILED_REPLY,)
    assert [str(f) for f in handled.failures] == ["every provider is down"]
    assert effects[-1] == MarkAnswered(QUESTION)


def test_a_reply_the_platform_refused_is_reported_the_delivery_marked_and_no_workflow():
    handled, effects = drive(converse(QUESTION, POLICY, NOW), world(refuse_sends=True))
    assert handled.answer is None
    assert [type(f) for f in handled.failures] == [SendFailed]
    assert effects[-1] == MarkAnswered(QUESTION)


def test_a_follow_up_in_the_chat_is_read_with_its_conversation_and_recorded_in_it():
    earlier = Ongoing(5, (Exchange("How long do I have to return shirts?", "30 days [1]."),), NOW)
    records: list = []
    follow_up = attrs.evolve(QUESTION, text="and for shoes?")
    handled, effects = drive(
        converse(follow_up, POLICY, NOW), world(ongoing=earlier, records=records)
    )
    [load] = [e for e in effects if isinstance(e, LoadConversation)]
    assert load == LoadConversation("telegram", place_key("telegram", "42"))
    search = next(e for e in effects if isinstance(e, SearchChunks))
    assert search.text == "How long do I have to return shirts? and for shoes?"
    [record] = records
    assert (record.channel, record.conversation_id, record.question) == (
        "telegram",
        5,
        "and for shoes?",
    )
    assert record.outcome == "answered" and record.continuation == load.key
    assert record.started == NOW and record.participant == "7"
    assert handled.failures == ()


def test_a_conversation_that_cannot_be_loaded_or_recorded_does_not_stop_the_answer():
    base = world()

    def broken(effect):
        if isinstance(effect, LoadConversation | RecordTurn):
            raise RuntimeError("the database is down")
        return base(effect)

    handled, effects = drive(converse(QUESTION, POLICY, NOW), broken)
    assert sent(effects) == [("Within 30 days [1].\n\nSources:\n[1] refunds.md › Returns",)]
    assert [str(f) for f in handled.failures] == ["the database is down"] * 2
    assert effects[-2] == MarkAnswered(QUESTION)
