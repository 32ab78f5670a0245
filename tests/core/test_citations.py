from ragcore.chat.citations import resolve_citations
from ragcore.sources import Hit, number_sources, trim_hits


def hit(i: int, text: str = "text", score: float = 0.5) -> Hit:
    return Hit(chunk_id=100 + i, document_id=i, document_name=f"doc{i}.md", text=text, score=score)


SOURCES = number_sources([hit(1, "Refunds take 5 days."), hit(2, "We ship to the EU.")])


def test_cited_sources_are_listed_in_number_order():
    answer, citations = resolve_citations(
        "We ship to the EU [2]. Refunds take 5 days [1].", SOURCES
    )
    assert answer == "We ship to the EU [2]. Refunds take 5 days [1]."
    assert [(c.number, c.document_name, c.chunk_id) for c in citations] == [
        (1, "doc1.md", 101),
        (2, "doc2.md", 102),
    ]
    assert citations[0].snippet == "Refunds take 5 days."


def test_markers_pointing_at_no_source_are_removed():
    answer, citations = resolve_citations("Refunds take 5 days [1] [7]. Also [3, 1].", SOURCES)
    assert answer == "Refunds take 5 days [1]. Also [1]."
    assert [c.number for c in citations] == [1]


def test_an_answer_without_markers_cites_nothing():
    assert resolve_citations("I do not know.", SOURCES) == ("I do not know.", ())


def test_long_snippets_are_shortened():
    [source] = number_sources([hit(1, "x" * 1000)])
    _, [citation] = resolve_citations("[1]", (source,))
    assert len(citation.snippet) == 240 and citation.snippet.endswith("…")


def test_trimming_drops_the_lowest_ranked_first():
    hits = [hit(1, "a" * 50), hit(2, "b" * 50), hit(3, "c" * 50)]
    assert trim_hits(hits, 120) == hits[:2]
    assert trim_hits(hits, 150) == hits


def test_a_budget_below_the_best_hit_drops_everything_as_rule_5_says():
    hits = [hit(1, "a" * 50), hit(2, "b" * 5)]
    assert trim_hits(hits, 10) == []


def test_a_zero_budget_disables_trimming():
    hits = [hit(1, "a" * 50_000), hit(2, "b" * 50_000)]
    assert trim_hits(hits, 0) == hits
