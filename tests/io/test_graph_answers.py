"""The knowledge graph's list in answers: a question reaches the document one relation
away from what it names, which hybrid search alone leaves out. Answered by a model (the
fake OpenAI server) so the sources it is sent can be read."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_graph import GRAPH_ON, OWNERS, SUPPLIERS, add

DISTRACTORS = [
    f"# Note {n}\n\nThe company that {verb} the {thing} owns a depot in {town}.\n"
    for n, (verb, thing, town) in enumerate(
        [
            ("makes", "vans", "Bristol"),
            ("makes", "crates", "Hull"),
            ("repairs", "widgets", "York"),
            ("owns", "fleet", "Derby"),
            ("makes", "labels", "Bath"),
            ("paints", "signs", "Luton"),
            ("makes", "boxes", "Crewe"),
            ("owns", "trucks", "Wigan"),
            ("makes", "pallets", "Ely"),
            ("sells", "widgets", "Ripon"),
            ("makes", "tools", "Poole"),
            ("owns", "stores", "Sale"),
        ]
    )
]


async def sources_sent(api: httpx.AsyncClient, fake: Any, question: str) -> str:
    fake.requests.clear()
    response = await api.post("/chat", json={"question": question})
    assert response.status_code == 200, response.text
    [request] = fake.requests_to("/v1/chat/completions")
    return str(request.body)


@pytest.fixture
def settings_overrides(request: pytest.FixtureRequest, openai_fake: Any) -> dict[str, Any]:
    return on_openai(openai_fake, **getattr(request, "param", {}))


@pytest.fixture
async def openai_fake(serve_fake: Any) -> Any:
    return await serve_fake(FakeOpenAI())


@pytest.mark.parametrize(
    ("settings_overrides", "found"),
    # weighed as much as the other lists: with twelve notes that share the question's
    # words, the default 0.5 does not lift the owners' page among the eight sources
    [({**GRAPH_ON, "graph_weight": "1"}, True), ({}, False)],
    indirect=["settings_overrides"],
)
async def test_a_question_reaches_the_document_one_relation_away(api, openai_fake, found):
    """Who owns the maker of the Widget X: owners.md shares no word with the question; the
    graph reaches it through Foo Ltd, named beside the Widget X in suppliers.md."""
    await add(api, "suppliers.md", SUPPLIERS)
    await add(api, "owners.md", OWNERS)
    for n, text in enumerate(DISTRACTORS):
        await add(api, f"note{n}.md", text)
    sent = await sources_sent(api, openai_fake, "Who owns the company that makes the Widget X?")
    assert "suppliers.md" in sent
    assert ("owners.md" in sent) is found


# ---------------------------------------------------------------- a model's extraction

MODEL_GRAPH = {**GRAPH_ON, "graph_model_extraction": "true", "usage_ledger": "true"}


def graph_reply(body: dict[str, Any]) -> str:
    """The fake model reads a passage for its graph as a model would: the acquisition in
    OWNERS as a typed relation, and one name the passage does not hold (dropped)."""
    prompt = body["messages"][-1]["content"]
    if "Extract the knowledge graph" not in prompt:
        return "Foo Ltd makes it [1]."
    if "acquired" in prompt:
        return (
            '```json\n{"entities": [{"name": "Foo Ltd", "type": "organisation"}, '
            '{"name": "Bar Inc", "type": "organisation"}, {"name": "Zeta Corp", "type": "x"}],'
            ' "relations": [{"source": "Bar Inc", "target": "Foo Ltd", "type": "acquired"},'
            ' {"source": "Zeta Corp", "target": "Foo Ltd", "type": "owns"}]}\n```'
        )
    return '{"entities": [], "relations": []}'


@pytest.mark.parametrize("settings_overrides", [MODEL_GRAPH], indirect=True)
async def test_a_model_adds_typed_relations_metered_in_the_ledger(api, openai_fake):
    openai_fake.respond = graph_reply
    await add(api, "owners.md", OWNERS)

    calls = openai_fake.requests_to("/v1/chat/completions")
    assert len(calls) == 1  # one chunk, one call
    [bar] = (await api.get("/graph/entities", params={"q": "bar inc"})).json()["entities"]
    detail = (await api.get(f"/graph/entities/{bar['id']}")).json()
    [foo] = [n for n in detail["neighbours"] if n["entity"]["name"] == "Foo Ltd"]
    assert foo["kinds"] == ["acquired", "co_occurs"]
    names = {e["name"] for e in (await api.get("/graph/entities")).json()["entities"]}
    assert "Zeta Corp" not in names  # not in the passage: not believed
    usage = (await api.get("/usage")).json()
    assert usage["today"]["tokens"] > 0  # the extraction's tokens are in the ledger


@pytest.mark.parametrize(
    "settings_overrides", [{**MODEL_GRAPH, "budget_daily_tokens": "10"}], indirect=True
)
async def test_a_spent_budget_leaves_the_rules_reading_alone(api, openai_fake):
    openai_fake.respond = graph_reply
    await add(api, "owners.md", OWNERS)
    assert openai_fake.requests_to("/v1/chat/completions") == []  # no call past the cap
    names = {e["name"] for e in (await api.get("/graph/entities")).json()["entities"]}
    assert {"Foo Ltd", "Bar Inc"} <= names  # the offline rules still read it
