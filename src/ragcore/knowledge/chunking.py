"""Split a document into chunks that follow its headings, paragraphs and sentences.

A chunk never straddles a heading, so each remembers the heading path it sits
under; paragraphs are packed together up to ``target_chars``, and a paragraph
longer than that is cut between sentences (or, for a sentence longer still,
between words).
"""

from __future__ import annotations

import re

import attrs

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
DEFAULT_TARGET_CHARS = 1200


@attrs.frozen
class Chunk:
    position: int
    text: str
    heading_path: tuple[str, ...] = ()


def chunk_text(text: str, target_chars: int = DEFAULT_TARGET_CHARS) -> list[Chunk]:
    """Chunks of ``text`` in reading order; empty when the text has no words."""
    chunks: list[Chunk] = []
    for heading_path, paragraphs in _sections(text):
        for piece in _pack(paragraphs, target_chars):
            chunks.append(Chunk(position=len(chunks), text=piece, heading_path=heading_path))
    return chunks


def _sections(text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """(heading path, paragraphs) for each run of text between markdown headings."""
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    path: list[tuple[int, str]] = []
    paragraphs: list[str] = []
    lines: list[str] = []

    def end_paragraph() -> None:
        if lines:
            paragraph = " ".join(line.strip() for line in lines).strip()
            if paragraph:
                paragraphs.append(paragraph)
            lines.clear()

    def end_section() -> None:
        end_paragraph()
        if paragraphs:
            sections.append((tuple(title for _, title in path), list(paragraphs)))
            paragraphs.clear()

    for line in text.replace("\r\n", "\n").split("\n"):
        heading = _HEADING.match(line)
        if heading:
            end_section()
            level = len(heading.group(1))
            path[:] = [(lvl, title) for lvl, title in path if lvl < level]
            path.append((level, heading.group(2)))
        elif not line.strip():
            end_paragraph()
        else:
            lines.append(line)
    end_section()
    return sections


def _pack(paragraphs: list[str], target: int) -> list[str]:
    return _greedy([unit for p in paragraphs for unit in _fit(p, target)], target, "\n\n")


def _fit(paragraph: str, target: int) -> list[str]:
    """The paragraph whole if it fits, else sentence groups (or word groups) that do."""
    if len(paragraph) <= target:
        return [paragraph]
    parts = []
    for sentence in _SENTENCE_END.split(paragraph):
        fits = len(sentence) <= target
        parts.extend([sentence] if fits else _greedy(sentence.split(), target, " "))
    return _greedy(parts, target, " ")


def _greedy(units: list[str], target: int, separator: str) -> list[str]:
    """Join consecutive units with ``separator`` while the result stays within ``target``."""
    pieces: list[str] = []
    current = ""
    for unit in units:
        joined = f"{current}{separator}{unit}" if current else unit
        if current and len(joined) > target:
            pieces.append(current)
            current = unit
        else:
            current = joined
    if current:
        pieces.append(current)
    return pieces
