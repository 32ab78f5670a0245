"""Split a document into chunks that follow its headings, paragraphs and sentences.

Sizes are in tokens, counted by a simple rule rather than a model's tokenizer
(the core loads no model): a token is one CJK ideograph, kana or hangul
syllable, one run of up to five letters or digits, or one punctuation mark.
Measured against the Llama tokenizer of the local embedder on 2,000 SciFact
abstracts, the rule counts a median 0.99 of the real tokens (90 % of texts
within 0.87-1.18); "about 4 characters a token" gives the same median but a
wider spread (0.80-1.20) and counts CJK text four times too short.

A chunk never straddles a heading, so each remembers the heading path it sits
under (and, once stored, its document and its position in it). Paragraphs are
packed whole up to ``target_tokens``; a paragraph longer than that is cut
between sentences, a sentence longer still between words, and a "word" longer
still (a URL, a base64 blob) between tokens. Each chunk after the first in a
section begins with the end of the one before, up to ``overlap_tokens``: whole
trailing paragraphs or sentences, or trailing words when the last sentence
alone is longer than the overlap.

A markdown table (a run of lines starting with ``|``, as ``table_markdown`` writes the
tables the readers find) is cut between rows, never inside one, and each row is written
with its header row's column names, one line a row (a table without a header row, as
HTML lays pages out with, its cells joined with `` | ``): ``Dish: Pizza; Size: large; Price:
14.50`` (``table_lines``). So every chunk of a table carries its header, and a row
retrieved alone says what its values are. Tried first, the markdown rows under the
header line repeated at the top of each chunk: the local embedder put "How much is the
large pizza?" 0.447 from the chunk holding its row, under its topic floor (0.45), and
0.49 with the rows named; offline, the question was declined over the markdown rows
(tests/io/test_document_tables.py) and is answered over the named ones. A row longer
than a chunk is the one exception: it is cut as a paragraph is. Rows are not carried into
the next chunk as overlap: each stands whole in one chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# a markdown code fence (``` or ~~~, three or more, a language name after it)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
#: how a chunk's text marks a code block: its lines between two of these lines
CODE_FENCE = "```"
#: how a line of a markdown table begins
TABLE_ROW = "|"
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WIDE = re.compile(rf"[{_CJK}\u3000-\u303f\uff00-\uffef]")  # written without spaces
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w){{1,5}}|[^\w\s]")
# Fits the 256-wordpiece window of the local MiniLM embedder: on 1,500 SciFact abstracts
# chunked at 224 the longest chunk was 248 wordpieces (at 256, 1 % went over and were cut).
DEFAULT_TARGET_TOKENS = 224
DEFAULT_OVERLAP_TOKENS = 32


@attrs.frozen
class Chunk:
    position: int
    text: str
    heading_path: tuple[str, ...] = ()


def count_tokens(text: str) -> int:
    """Tokens in ``text`` by the rule in this module's docstring."""
    return len(_TOKEN.findall(text))


def count_tokens_lazily(text: str) -> int:
    """``count_tokens`` without a list of every token: for a whole document's text."""
    return sum(1 for _ in _TOKEN.finditer(text))


def chunk_text(
    text: str,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
) -> list[Chunk]:
    """Chunks of ``text`` in reading order; empty when the text has no words.

    Every chunk has at most ``target_tokens`` tokens, overlap included.
    """
    if target_tokens < 1:
        raise ValueError("target_tokens must be at least 1")
    overlap_tokens = max(0, min(overlap_tokens, target_tokens // 2))
    chunks: list[Chunk] = []
    for heading_path, paragraphs in _sections(text):
        units = [unit for i, p in enumerate(paragraphs) for unit in _fit(i, p, target_tokens)]
        for piece in _pack(units, target_tokens, overlap_tokens):
            chunks.append(Chunk(position=len(chunks), text=piece, heading_path=heading_path))
    return chunks


@attrs.frozen
class _Unit:
    """A paragraph, or a piece of one, with the paragraph's index in its section; or a
    table's row, or a piece of one."""

    paragraph: int
    text: str
    tokens: int
    row: int = -1  # its row in its table; -1: not a table's


def _sections(text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """(heading path, paragraphs) for each run of text between markdown headings. A
    fenced code block is one paragraph that keeps its lines, and a "# comment" in it is
    no heading."""
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    path: list[tuple[int, str]] = []
    paragraphs: list[str] = []
    lines: list[str] = []
    rows: list[str] = []  # the lines of the table being read
    fence: str | None = None  # the open code block's fence

    def end_paragraph() -> None:
        if lines:
            paragraph = " ".join(line.strip() for line in lines).strip()
            if any(ch.isalnum() for ch in paragraph):
                paragraphs.append(paragraph)
            lines.clear()

    def end_code() -> None:
        body = "\n".join(line.rstrip() for line in lines).strip("\n")
        if any(ch.isalnum() for ch in body):
            paragraphs.append(f"{CODE_FENCE}\n{body}\n{CODE_FENCE}")
        lines.clear()

    def end_table() -> None:
        if any(ch.isalnum() for row in rows for ch in row):
            paragraphs.append("\n".join(rows))
        rows.clear()

    def end_section() -> None:
        end_table()
        end_paragraph()
        if paragraphs:
            sections.append((tuple(title for _, title in path), list(paragraphs)))
            paragraphs.clear()

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                end_code()
                fence = None
            else:
                lines.append(line)
            continue
        if line.lstrip().startswith(TABLE_ROW):
            end_paragraph()
            rows.append(line.strip())
            continue
        end_table()
        heading = _HEADING.match(line)
        if opening:
            end_paragraph()
            fence = opening.group(1)
        elif heading:
            end_section()
            level = len(heading.group(1))
            path[:] = [(lvl, title) for lvl, title in path if lvl < level]
            path.append((level, heading.group(2)))
        elif not line.strip():
            end_paragraph()
        else:
            lines.append(line)
    if fence is not None:  # never closed: the code runs to the end
        end_code()
    end_section()
    return sections


def _fit(index: int, paragraph: str, target: int) -> list[_Unit]:
    """The paragraph whole if it fits; else its sentences, and the words of a sentence
    that alone is over the target (``_pack`` packs them back together)."""
    if paragraph.startswith(TABLE_ROW):
        return _table_rows(index, paragraph, target)
    tokens = count_tokens(paragraph)
    if tokens <= target:
        return [_Unit(index, paragraph, tokens)]
    if paragraph.startswith(CODE_FENCE):
        return [
            _Unit(index, piece, count_tokens(piece)) for piece in _code_pieces(paragraph, target)
        ]
    units = []
    for sentence in _sentences(paragraph):
        size = count_tokens(sentence)
        if size <= target:
            units.append(_Unit(index, sentence, size))
        else:
            for word in sentence.split():
                units.extend(_Unit(index, p, count_tokens(p)) for p in _cut_word(word, target))
    return units


def table_lines(rows: Sequence[Sequence[str]], *, header: bool) -> list[str]:
    """A table as one line per row, for a table held in another's cell (a markdown table
    cannot nest): ``Name: Ada; Role: engineer`` with ``header`` (and at least one row
    under it; empty cells left out, unnamed columns ``column N``); without, the cells
    joined with `` | ``. Blank rows are dropped."""
    cleaned = _table_cells(rows)
    if not header or len(cleaned) < 2:
        return [" | ".join(cell for cell in row if cell) for row in cleaned]
    names = cleaned[0]
    lines = []
    for row in cleaned[1:]:
        pairs = [
            f"{names[i] if i < len(names) and names[i] else f'column {i + 1}'}: {value}"
            for i, value in enumerate(row)
            if value
        ]
        lines.append("; ".join(pairs))
    return lines


def table_markdown(rows: Sequence[Sequence[str]], *, header: bool) -> str:
    """A table as a markdown table, one line a row: ``chunk_text`` cuts it between rows
    and writes each row with its column names from the header row (the first, with
    ``header`` and a row under it), so a row is found with them in any chunk. Without a
    header the rows stand alone (no delimiter line). Blank rows are dropped; "" when none
    is left."""
    cleaned = _table_cells(rows)
    lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in cleaned]
    if header and len(lines) > 1:
        lines.insert(1, "|" + " --- |" * len(cleaned[0]))
    return "\n".join(lines)


def _table_cells(rows: Sequence[Sequence[str]]) -> list[list[str]]:
    """The rows' cells on one line each, blank rows left out."""
    cleaned = [[" ".join(str(cell).split()) for cell in row] for row in rows]
    return [row for row in cleaned if any(row)]


def _table_rows(index: int, table: str, target: int) -> list[_Unit]:
    """A table's rows, each a unit packed whole: named by the header row (the line above a
    ``| --- |`` delimiter line) when there is one, else their cells joined with `` | ``
    (``table_lines``). A row longer than a chunk is cut as a paragraph is (``_fit``)."""
    lines = table.split("\n")
    header = len(lines) > 2 and _is_delimiter(lines[1])
    rows = [_cells(line) for line in ([lines[0], *lines[2:]] if header else lines)]
    units: list[_Unit] = []
    for number, row in enumerate(table_lines(rows, header=header)):
        units.extend(attrs.evolve(unit, row=number) for unit in _fit(index, row, target))
    return units


def _cells(row: str) -> list[str]:
    """The cells of a markdown table's row; ``\\|`` is a bar inside a cell."""
    inner = row.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BORDER.split(inner)]


def _is_delimiter(line: str) -> bool:
    """A markdown table's delimiter line, ``| --- | :---: |``."""
    return "-" in line and not line.strip("|:- \t")


def _code_pieces(block: str, target: int) -> list[str]:
    """A code block over the target, cut between lines (a line longer still, between
    words), each piece a code block of its own."""
    budget = max(1, target - 2 * count_tokens(CODE_FENCE))
    lines = []
    for line in block.split("\n")[1:-1]:
        if count_tokens(line) <= budget:
            lines.append(line)
        else:
            lines.extend(p for w in line.split() for p in _cut_word(w, budget))
    pieces: list[list[str]] = []
    size = 0
    for line in lines:
        tokens = count_tokens(line)
        if not pieces or size + tokens > budget:
            pieces.append([])
            size = 0
        pieces[-1].append(line)
        size += tokens
    return [f"{CODE_FENCE}\n" + "\n".join(piece) + f"\n{CODE_FENCE}" for piece in pieces]


def _sentences(text: str) -> list[str]:
    return [sentence for sentence in _SENTENCE_END.split(text) if sentence]


def _cut_word(word: str, target: int) -> list[str]:
    """A word that alone has more than ``target`` tokens, cut between tokens."""
    spans = [match.end() for match in _TOKEN.finditer(word)]
    if len(spans) <= target:
        return [word]
    cuts = [0, *spans[target - 1 : -1 : target], len(word)]
    return [word[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if word[a:b]]


def _pack(units: list[_Unit], target: int, overlap: int) -> list[str]:
    """Chunk texts: units packed up to ``target``, each chunk after the first starting
    with the tail of the one before (at most ``overlap`` tokens)."""
    chunks: list[str] = []
    carry: list[_Unit] = []
    i = 0
    while i < len(units):
        current = list(carry)
        while current and _total(current) + units[i].tokens > target:
            current.pop(0)  # the overlap gives way to new text
        current.append(units[i])  # every chunk brings at least one new unit
        i += 1
        while i < len(units) and _total(current) + units[i].tokens <= target:
            current.append(units[i])
            i += 1
        chunks.append(_join(current))
        carry = _tail(current, overlap) if i < len(units) else []
    return chunks


def _glue(before: str, after: str) -> str:
    """Two pieces of one paragraph rejoined: with a space, except in scripts written without."""
    if _WIDE.match(before[-1]) or _WIDE.match(after[0]):
        return before + after
    return f"{before} {after}"


def _total(units: list[_Unit]) -> int:
    return sum(unit.tokens for unit in units)


def _join(units: list[_Unit]) -> str:
    """Pieces of one paragraph (or table row) rejoin as they were cut, a table's rows one
    a line, paragraphs with a blank line."""
    text = units[0].text
    for before, unit in zip(units, units[1:], strict=False):
        if unit.paragraph != before.paragraph or unit.text.startswith(CODE_FENCE):
            text = f"{text}\n\n{unit.text}"
        elif unit.row != before.row:
            text = f"{text}\n{unit.text}"
        else:
            text = _glue(text, unit.text)
    return text


def _tail(units: list[_Unit], budget: int) -> list[_Unit]:
    """The end of a chunk that fits in ``budget`` tokens: whole units, then whole
    sentences of the unit before them, or trailing words if nothing else fits."""
    taken: list[_Unit] = []
    for unit in reversed(units):
        if unit.row >= 0:
            break  # a table's rows stand whole, in one chunk each
        if unit.tokens <= budget:
            taken.insert(0, unit)
            budget -= unit.tokens
            continue
        if unit.text.startswith(CODE_FENCE):
            break  # a code block is carried whole or not at all
        parts = _trailing(_sentences(unit.text), budget)
        if not parts and not taken:
            parts = _trailing(unit.text.split(), budget) or _trailing_tokens(unit.text, budget)
        if parts:
            taken.insert(0, _Unit(unit.paragraph, parts, count_tokens(parts)))
        break
    return taken


def _trailing(parts: list[str], budget: int) -> str:
    """The longest run of trailing ``parts`` within ``budget`` tokens, joined."""
    kept: list[str] = []
    for part in reversed(parts):
        size = count_tokens(part)
        if size > budget:
            break
        kept.insert(0, part)
        budget -= size
    text = ""
    for part in kept:
        text = _glue(text, part) if text else part
    return text


def _trailing_tokens(text: str, budget: int) -> str:
    """The last ``budget`` tokens of ``text`` (for text without spaces, such as CJK)."""
    starts = [match.start() for match in _TOKEN.finditer(text)]
    return text[starts[-min(budget, len(starts))] :] if budget and starts else ""
