"""Retrieved chunks, the sources a prompt numbers, and the trimming of rule 5."""

from __future__ import annotations

from collections.abc import Sequence

import attrs


@attrs.frozen
class Hit:
    """One chunk found by search, with the document it belongs to."""

    chunk_id: int
    document_id: int
    document_name: str
    text: str
    score: float
    heading_path: tuple[str, ...] = ()
    #: set on the live-data source (ragcore.live.pipeline.live_hit), whose rows come from
    #: the owner's systems: it has no document or chunk (their ids are 0)
    live_action_id: int | None = None
    #: where the document is published, when the owner said (a citation links to it)
    source_url: str | None = None
    #: set on the owner's answer given as a source (ragcore.answers.matching.owner_hit):
    #: it has no document or chunk either
    owner_answer_id: int | None = None


@attrs.frozen
class Source:
    """A hit as the prompt shows it: numbered from 1 in rank order."""

    number: int
    hit: Hit


def trim_hits(hits: Sequence[Hit], max_chars: int) -> list[Hit]:
    """Keep the best-ranked hits whose texts fit in ``max_chars`` together (rule 5).

    Hits come best first; the lowest-ranked are dropped first. 0 disables trimming.
    A budget smaller than the best hit alone leaves nothing (rule 5, exactly): a
    chunk is about 1,000 characters, so MAX_CONTEXT_CHARS should be well above that.
    """
    if max_chars <= 0:
        return list(hits)
    kept: list[Hit] = []
    total = 0
    for hit in hits:
        if total + len(hit.text) > max_chars:
            break
        kept.append(hit)
        total += len(hit.text)
    return kept


def number_sources(hits: Sequence[Hit]) -> tuple[Source, ...]:
    return tuple(Source(number=i, hit=hit) for i, hit in enumerate(hits, start=1))
