"""Role memory without a server: the duplicate key, the checks of a new item, and the
role context (order and size budget), also as the chat pipeline injects it."""

from datetime import UTC, datetime, timedelta

import pytest

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.pipeline import ChatRequest, answer_question
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.memory import (
    CONTEXT_BUDGET_CHARS,
    AddMemory,
    AlreadyRemembered,
    FetchRoleMemory,
    FindDuplicateMemory,
    FindUnembeddedMemory,
    MemoryItem,
    NewMemory,
    StoreMemoryVectors,
    assemble_context,
    check_memory,
    content_hash,
    normalise_text,
    remember,
    role_context,
    seed_memories,
)
from ragcore.errors import InvalidInput
from ragcore.generation import Generate
from ragcore.knowledge.effects import Embed
from tests.core.drive import drive
from tests.core.test_chat_pipeline import POLICY, recorded

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def item(id, text, source="owner", importance=3, similarity=None, minutes=0):
    return MemoryItem(
        id, "sales", text, (), source, importance, T0 + timedelta(minutes=minutes), similarity
    )


def test_normalising_folds_case_collapses_whitespace_and_strips():
    assert normalise_text("  Always  greet\tthe\n\nCUSTOMER by Name. ") == (
        "always greet the customer by name."
    )
    assert normalise_text("Straße") == normalise_text("STRASSE")


def test_the_hash_is_of_the_whole_normalised_text_not_a_prefix():
    assert content_hash("Offer  a DISCOUNT") == content_hash("offer a discount")
    long = "x" * 500
    assert content_hash(long + " a") != content_hash(long + " b")
    assert len(content_hash("a")) == 64


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "text"),
        ({"text": "  "}, "text"),
        ({"text": "x" * 1001}, "text"),
        ({"text": "ok", "mood": "x"}, "mood"),
        ({"text": "ok", "tags": "pricing"}, "tags"),
        ({"text": "ok", "tags": ["Price List"]}, "tags"),
        ({"text": "ok", "source": "gossip"}, "source"),
        ({"text": "ok", "importance": 9}, "importance"),
        ({"text": "ok", "importance": True}, "importance"),
    ],
)
def test_bad_memory_bodies_name_the_field(body, field):
    with pytest.raises(InvalidInput) as err:
        check_memory(body)
    assert field in err.value.field


def test_a_memory_defaults_to_an_owner_instruction_of_middle_importance():
    new = check_memory({"text": " Quote prices in euros. ", "tags": ["pricing", "pricing"]})
    assert (new.text, new.tags, new.source, new.importance) == (
        "Quote prices in euros.",
        ("pricing",),
        "owner",
        3,
    )


def test_every_built_in_role_has_seeds_as_owner_instructions():
    for role in BUILT_IN.values():
        seeds = seed_memories(role.memory_seeds)
        assert seeds and all(s.source == "owner" for s in seeds)


def test_the_context_puts_owner_then_profile_then_the_most_relevant_learned():
    items = [
        item(1, "Learned far.", "learned", similarity=0.1),
        item(2, "Profile: we sell bikes.", "profile"),
        item(3, "Learned near.", "learned", similarity=0.9),
        item(4, "Owner, less important.", "owner", importance=2),
        item(5, "Owner, most important.", "owner", importance=5, minutes=9),
    ]
    context = assemble_context(items)
    assert [i.id for i in context.items] == [5, 4, 2, 3, 1]
    assert context.text == (
        "Owner instructions:\n- Owner, most important.\n- Owner, less important.\n\n"
        "Business profile:\n- Profile: we sell bikes.\n\n"
        "Learned patterns:\n- Learned near.\n- Learned far."
    )
    assert context.dropped == 0 and context.budget_chars == CONTEXT_BUDGET_CHARS


def test_the_budget_drops_the_lowest_priority_first():
    items = [
        item(1, "o" * 900, "owner"),
        item(2, "p" * 600, "profile"),
        item(3, "l" * 500, "learned", similarity=0.9),
        item(4, "m" * 10, "learned", similarity=0.2),  # would fit, but ranks below a dropped one
    ]
    context = assemble_context(items, budget_chars=2000)
    assert [i.id for i in context.items] == [1, 2]
    assert len(context.text) <= 2000 and context.dropped == 2
    assert "l" * 500 not in context.text
    assert assemble_context([], 2000).text == ""


def test_role_context_embeds_the_query_unless_given_its_vector():
    answers = {
        FindUnembeddedMemory: [],  # every item has its vector
        Embed: [[0.5, 0.5]],
        FetchRoleMemory: [item(1, "Be brief.")],
    }
    context, effects = drive(role_context("sales", "prices?"), lambda e: answers[type(e)])
    assert [type(e) for e in effects] == [FindUnembeddedMemory, Embed, FetchRoleMemory]
    assert effects[2] == FetchRoleMemory("sales", (0.5, 0.5), learned_limit=8)
    assert context.text == "Owner instructions:\n- Be brief."
    _, effects = drive(role_context("sales", "prices?", [0.1]), lambda e: answers[type(e)])
    assert [type(e) for e in effects] == [FindUnembeddedMemory, FetchRoleMemory]


def test_items_without_a_vector_are_embedded_as_documents_before_the_search():
    answers = {
        FindUnembeddedMemory: [(4, "Be brief."), (9, "We sell bikes.")],
        Embed: [[0.1, 0.2], [0.3, 0.4]],
        StoreMemoryVectors: None,
        FetchRoleMemory: [item(4, "Be brief.")],
    }
    _, effects = drive(role_context("sales", "prices?", [0.5]), lambda e: answers[type(e)])
    assert effects[:3] == [
        FindUnembeddedMemory("sales"),
        Embed(("Be brief.", "We sell bikes."), purpose="document"),
        StoreMemoryVectors(((4, (0.1, 0.2)), (9, (0.3, 0.4)))),
    ]
    assert isinstance(effects[3], FetchRoleMemory)  # searched once they have their vectors


def test_the_chat_pipeline_injects_the_same_context_text():
    memory = [item(1, "Always mention the 30-day guarantee."), item(2, "We sell bikes.", "profile")]
    base = recorded()

    def answer(effect):
        return memory if isinstance(effect, FetchRoleMemory) else base(effect)

    request = ChatRequest("return?", employee=BUILT_IN["sales"])
    _, effects = drive(answer_question(request, POLICY), answer)
    [fetch] = [e for e in effects if isinstance(e, FetchRoleMemory)]
    assert fetch.role == "sales" and fetch.vector == (0.1, 0.2, 0.3)  # the question's vector
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert f"<role_context>\n{assemble_context(memory).text}\n</role_context>" in (
        generate.prompt.system
    )


def test_without_a_role_no_memory_is_fetched():
    _, effects = drive(answer_question(ChatRequest("return?"), POLICY), recorded())
    assert not any(isinstance(e, FetchRoleMemory) for e in effects)


def _remembering(stored_meanwhile=False, held=None):
    found = iter([held, 12] if stored_meanwhile else [held])

    def answer(effect):
        match effect:
            case FindDuplicateMemory():
                return next(found)
            case FindOwnerAnswer():
                return None
            case Embed(texts=texts):
                return [[0.5] * 3 for _ in texts]
            case AddMemory(role=role, memory=memory, vector=vector):
                if stored_meanwhile:
                    return None
                assert vector == (0.5, 0.5, 0.5)
                return MemoryItem(7, role, memory.text, memory.tags, memory.source, 3)
        raise AssertionError(effect)

    return answer


def test_remembering_embeds_the_text_and_stores_it():
    item, effects = drive(remember("support", NewMemory(text="Be brief.")), _remembering())
    assert item.id == 7 and item.text == "Be brief."
    assert Embed(("Be brief.",), "document") in effects
    assert any(isinstance(e, AddMemory) for e in effects)


def test_a_text_already_remembered_is_refused_before_embedding_naming_the_item():
    seen = []

    def answer(effect):
        seen.append(effect)
        return _remembering(held=4)(effect)

    with pytest.raises(AlreadyRemembered, match="memory item 4") as refused:
        drive(remember("support", NewMemory(text="be   BRIEF.")), answer)
    assert refused.value.existing_id == 4
    assert not any(isinstance(e, Embed) for e in seen)


def test_a_text_stored_meanwhile_by_another_request_is_refused_naming_that_item():
    with pytest.raises(AlreadyRemembered) as refused:
        drive(remember("support", NewMemory(text="Be brief.")), _remembering(stored_meanwhile=True))
    assert refused.value.existing_id == 12
