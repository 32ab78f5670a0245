"""A document's graph, the question's reach and ranked list, and a model's extraction:
the knowledge graph's rules driven with recorded effect results."""

from __future__ import annotations

from typing import Any

from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.graph import (
    Neighbourhood,
    ReachedEntity,
    ReachGraph,
    rank_graph_chunks,
)
from ragcore.knowledge.graph_rules import (
    GraphPolicy,
    ModelExtraction,
    document_graph,
    graph_ranked,
    with_model,
)
from ragcore.settings import load_settings
from ragcore.usage import Capped, Caps
from tests.core.drive import drive

FIRST = "Our Service Level Agreement (SLA) is signed with Acme Corp."
LATER = "The SLA covers outages. Acme Corp was acquired by Globex in 2020."


def test_a_documents_aliases_reach_every_chunk():
    graph = document_graph(7, [(70, FIRST), (71, LATER)])
    assert graph.document_id == 7
    keys = [{e.key for e in chunk.entities} for chunk in graph.chunks]
    assert "service level agreement" in keys[0] and "service level agreement" in keys[1]
    assert "sla" not in keys[1]  # the acronym is the long form's entity in every chunk
    pairs = {(r.source, r.target) for r in graph.chunks[1].relations}
    assert ("acme corp", "globex") in pairs
    # named in different sentences: not related
    assert ("acme corp", "service level agreement") not in pairs


def test_the_graph_is_off_unless_turned_on_and_weighed():
    assert GraphPolicy.from_settings(load_settings({})) is None
    assert GraphPolicy.from_settings(load_settings({"GRAPH_ENABLED": "true"})) == GraphPolicy(
        0.5, 1, ()
    )
    weightless = load_settings({"GRAPH_ENABLED": "true", "GRAPH_WEIGHT": "0"})
    assert GraphPolicy.from_settings(weightless) is None
    neo4j = load_settings({"GRAPH_URI": "bolt://graph:7687", "DOMAIN_TERMS": "warranty card"})
    assert GraphPolicy.from_settings(neo4j) == GraphPolicy(0.5, 1, ("warranty card",))


def test_a_question_reaches_the_graph_with_its_keys_and_ranks_what_came_back():
    reached = Neighbourhood(
        (
            ReachedEntity("acme corp", 0, mentions=2, chunk_ids=(3, 9)),
            ReachedEntity("globex", 1, mentions=1, link=1, chunk_ids=(5,)),
            ReachedEntity("common", 0, mentions=500, chunk_ids=()),
        )
    )
    ranked, effects = drive(
        graph_ranked("who bought acme corp?", GraphPolicy(0.5, 2), 8),
        lambda effect: reached,
    )
    [reach] = effects
    assert isinstance(reach, ReachGraph) and reach.hops == 2
    assert "acme corp" in reach.keys and "who" not in reach.keys
    # a seed's chunk (0.5 each) before a neighbour's only chunk (0.5 ** 1 / 1 = 0.5): ties
    # by chunk id; a chunk naming both comes first
    assert ranked == (3, 5, 9)
    both = Neighbourhood((*reached.entities, ReachedEntity("x", 1, mentions=1, chunk_ids=(9,))))
    assert rank_graph_chunks(both, 2) == [9, 3]
    # a question naming nothing asks nothing
    assert drive(graph_ranked("why?", GraphPolicy(0.5), 8), lambda e: reached) == ((), [])


def reply_for(text: str) -> ModelReply:
    return ModelReply(text, "openai", "gpt-4o-mini")


ACQUIRED = (
    '{"entities": [{"name": "Acme Corp", "type": "organisation"}, '
    '{"name": "Globex", "type": "organisation"}, {"name": "Initech", "type": "x"}], '
    '"relations": [{"source": "Globex", "target": "Acme Corp", "type": "Acquired"}, '
    '{"source": "Initech", "target": "Globex", "type": "owns"}]}'
)


def test_a_model_adds_typed_relations_the_text_bears_out():
    graph = document_graph(1, [(10, LATER)])

    def answer(effect: Any) -> Any:
        assert isinstance(effect, Generate) and effect.task == "graph"
        assert effect.temperature == 0 and not effect.stream
        assert LATER in effect.prompt.user
        return reply_for(ACQUIRED)

    read, effects = drive(with_model(graph, [LATER], ModelExtraction()), answer)
    assert len(effects) == 1  # no ledger: one unmetered call
    relations = {(r.source, r.target, r.kind) for r in read.chunks[0].relations}
    assert ("globex", "acme corp", "acquired") in relations
    assert not any("initech" in (r.source, r.target) for r in read.chunks[0].relations)
    # the rules' reading is kept
    assert set(graph.chunks[0].relations) <= set(read.chunks[0].relations)


def test_a_failure_or_a_cap_leaves_the_rules_reading_and_asks_no_more():
    graph = document_graph(1, [(10, FIRST), (11, LATER)])

    def failing(effect: Any) -> Any:
        raise ConnectionError("the providers are down")

    read, effects = drive(with_model(graph, [FIRST, LATER], ModelExtraction()), failing)
    assert read == graph and len(effects) == 1

    capped = Capped("daily", 100, 100)
    metered = ModelExtraction(Caps(daily=100), ledger=True)
    read, effects = drive(with_model(graph, [FIRST, LATER], metered), lambda effect: capped)
    assert read == graph and len(effects) == 1  # the reservation refused: no call at all
