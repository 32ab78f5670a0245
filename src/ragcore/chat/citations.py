"""Citation markers: keep those that point at a supplied source, drop the rest."""

from __future__ import annotations

import re
from typing import Annotated

import attrs

from ragcore.converter import unless_sent
from ragcore.schema import described
from ragcore.sources import Source

#: a citation marker, with the space before it: [1], [2, 3]
MARKER = re.compile(r"\s?\[(\d+(?:\s*,\s*\d+)*)\]")
SNIPPET_CHARS = 240


@attrs.frozen
class Citation:
    number: int
    document_id: Annotated[
        int | None, described("null for live data (see live_action_id), the owner's answer")
    ]
    document_name: str
    chunk_id: Annotated[int | None, described("null for live data and the owner's answer")]
    snippet: str
    score: float
    heading_path: tuple[str, ...] = ()  # where in the document: headings, or "Page 3"
    live_action_id: Annotated[
        int | None,
        described(
            'the live-data action whose rows are the source ("live data: <action name>"); '
            "null for a document"
        ),
    ] = None
    source_url: Annotated[
        str | None,
        described("where the document is published, when the owner said; left out otherwise"),
    ] = unless_sent()
    owner_answer_id: Annotated[
        int | None,
        described(
            "the owner's answer this cites (GET /answers/{id}), named \"the owner's answer\"; "
            "left out for a document or live data"
        ),
    ] = unless_sent()


def resolve_citations(text: str, sources: tuple[Source, ...]) -> tuple[str, tuple[Citation, ...]]:
    """The answer with dangling markers removed, and the sources it cites, by number."""
    by_number = {source.number: source for source in sources}
    cited: set[int] = set()

    def keep_known(match: re.Match[str]) -> str:
        numbers = [int(n) for n in re.split(r"\s*,\s*", match.group(1))]
        known = [n for n in numbers if n in by_number]
        cited.update(known)
        if not known:
            return ""
        lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
        return lead + "".join(f"[{n}]" for n in known)

    cleaned = MARKER.sub(keep_known, text).strip()
    citations = tuple(citation_of(by_number[n]) for n in sorted(cited))
    return cleaned, citations


def citation_of(source: Source) -> Citation:
    """A source as its citation: live data and the owner's answer have no document."""
    hit = source.hit
    snippet = hit.text if len(hit.text) <= SNIPPET_CHARS else hit.text[: SNIPPET_CHARS - 1] + "…"
    live = hit.live_action_id is not None or hit.owner_answer_id is not None
    return Citation(
        number=source.number,
        document_id=None if live else hit.document_id,
        document_name=hit.document_name,
        chunk_id=None if live else hit.chunk_id,
        snippet=snippet,
        score=hit.score,
        heading_path=hit.heading_path,
        live_action_id=hit.live_action_id,
        source_url=hit.source_url,
        owner_answer_id=hit.owner_answer_id,
    )
