"""Proposals in the chat pipeline, driven with recorded results: the role is told what it
may propose, the block never reaches the answer, and a kept proposal goes through the
gate."""

import attrs

from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.effects import (
    FinishAction,
    LoadAutonomy,
    NewTicket,
    NoteAction,
    NotifyOwner,
    PerformAction,
    SaveAction,
    Sent,
    Ticket,
)
from ragcore.actions.flow import ActionPolicy
from ragcore.actions.kinds import Catalog, ChatopsAction
from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.memory import FetchRoleMemory, FindUnembeddedMemory
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.language import DetectLanguage
from ragcore.sources import Hit
from tests.core.drive import drive
from tests.core.test_autonomy import NOW

CATALOG = Catalog(webhook_targets=(("crm", "https://crm.example.com/in"),), chatops=True)
POLICY = ChatPolicy(
    max_context_chars=12000,
    max_output_tokens=256,
    temperature=0.2,
    learning=None,
    actions=ActionPolicy(CATALOG),
)
HITS = [Hit(11, 1, "callbacks.md", "We call customers back within a day.", 0.9)]
BLOCK = '<action>{"kind": "chatops", "text": "Call Ann back on +441234"}</action>'


def world(reply, autonomy):
    log = {"generate": [], "saved": [], "sent": [], "notified": []}

    def answer(effect):
        match effect:
            case DetectLanguage():
                return []
            case FindOwnerAnswer():
                return None
            case Embed():
                return [[0.1, 0.2]]
            case SearchChunks():
                return list(HITS)
            case FindUnembeddedMemory():
                return []  # every memory item has its vector
            case FetchRoleMemory():
                return []
            case Generate():
                log["generate"].append(effect)
                return ModelReply(reply, provider="recorded", model="m")
            case LoadAutonomy():
                return autonomy
            case NewTicket():
                return Ticket("7K3M9QXA4B", NOW)
            case SaveAction(record=record):
                log["saved"].append(record)
                return None
            case NoteAction():
                return None
            case NotifyOwner():
                log["notified"].append(effect)
                return Sent(True)
            case PerformAction(record=record):
                log["sent"].append(record.action)
                return Sent(True, "HTTP 200")
            case FinishAction(move=move):
                return attrs.evolve(log["saved"][-1], status=move.after)
        raise AssertionError(effect)

    return answer, log


def ask(origin, reply, autonomy, employee=BUILT_IN["support"]):
    answer, log = world(reply, autonomy)
    request = ChatRequest("Can someone call me back?", employee=employee, origin=origin)
    outcome, effects = drive(answer_question(request, POLICY), answer)
    return outcome, effects, log


def test_a_proposal_from_a_customer_conversation_is_held_for_the_owner():
    semi = AutonomyConfig(mode="semi", approval_channel="telegram", approval_target="4242")
    outcome, _, log = ask("telegram", "We will call you back within a day [1].\n" + BLOCK, semi)
    assert outcome.answer == "We will call you back within a day [1]."
    assert "<action>" not in outcome.answer
    assert outcome.action.status == "pending" and outcome.action.kind == "chatops"
    [record] = log["saved"]
    assert record.origin == "telegram" and record.role == "support" and record.public
    assert record.action == ChatopsAction("Call Ann back on +441234")
    assert log["sent"] == [] and len(log["notified"]) == 1


def test_the_role_is_told_the_names_it_may_use_and_the_answer_is_not_streamed():
    semi = AutonomyConfig(mode="semi")
    _, _, log = ask("telegram", "Sure [1].", semi)
    [generate] = log["generate"]
    assert "Outbound actions" in generate.prompt.system
    assert '"target": NAME' in generate.prompt.system and "crm" in generate.prompt.system
    assert "https://crm.example.com" not in generate.prompt.system
    assert generate.stream is False  # the block must never be streamed to anyone


def test_in_full_mode_the_gate_executes_the_proposal():
    eager = attrs.evolve(BUILT_IN["support"], autonomy="full")
    outcome, _, log = ask("api", "Done [1].\n" + BLOCK, AutonomyConfig(mode="full"), eager)
    assert outcome.action.status == "executed"
    assert log["sent"] == [ChatopsAction("Call Ann back on +441234")]


def test_an_invalid_proposal_is_dropped_and_never_shown():
    semi = AutonomyConfig(mode="semi")
    url = '<action>{"kind": "webhook", "target": "https://evil.example/x"}</action>'
    outcome, _, log = ask("telegram", "We will call you [1]. " + url, semi)
    assert outcome.answer == "We will call you [1]."
    assert outcome.action is None and log["saved"] == []


def test_no_origin_or_autonomy_off_offers_nothing():
    outcome, effects, log = ask(None, "Sure [1]. " + BLOCK, AutonomyConfig(mode="semi"))
    assert not any(isinstance(e, LoadAutonomy) for e in effects)
    assert "Outbound actions" not in log["generate"][0].prompt.system
    assert log["generate"][0].stream is True
    assert outcome.action is None and log["saved"] == []
    off = ask("telegram", "Sure [1].", AutonomyConfig(mode="off"))[2]
    assert "Outbound actions" not in off["generate"][0].prompt.system


def test_nothing_is_loaded_when_no_kind_is_configured():
    bare = attrs.evolve(POLICY, actions=ActionPolicy(Catalog()))
    answer, _ = world("Sure [1].", AutonomyConfig(mode="full"))
    request = ChatRequest("Hi?", employee=BUILT_IN["support"], origin="telegram")
    _, effects = drive(answer_question(request, bare), answer)
    assert not any(isinstance(e, LoadAutonomy) for e in effects)


def test_a_sensitive_role_proposal_waits_for_the_owner_even_in_full():
    finance = attrs.evolve(BUILT_IN["finance"], autonomy="full", channels=("api",))
    reply = "<answer>Noted [1].</answer>\n" + BLOCK
    outcome, _, log = ask("api", reply, AutonomyConfig(mode="full"), finance)
    assert outcome.action.status == "pending" and log["sent"] == []
    assert outcome.answer.startswith("Noted [1].")
