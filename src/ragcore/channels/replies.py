"""Replies cut to a platform's length limit, with the answer's sources listed.

Lengths are counted in UTF-16 code units, as the platforms count them (an emoji is
two): counting code points would let a reply full of emoji run over the limit and be
refused. Cuts fall on the best boundary in the second half of the allowed length:
a blank line, then a line break, then the end of a sentence, then a space; a hard cut
only when a part has none of these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragcore.chat.citations import Citation

TELEGRAM_LIMIT = 4096  # sendMessage text
WHATSAPP_LIMIT = 1600  # one message body through the telephony provider's Messages API
DISCORD_LIMIT = 2000  # message content
MAX_PARTS = 10  # a longer reply is shortened rather than flooding the chat
SHORTENED = "… (shortened)"
SOURCE_LINE_CHARS = 100

_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n"),  # paragraph: cut before it
    re.compile(r"\n"),  # line
    re.compile(r"[.!?…。！？](?:[\"'”’)\]]*)(?=\s)|[。！？]"),  # sentence: cut after it
    re.compile(r"\s"),  # word
)


def units(text: str) -> int:
    """Length in UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def _fitting(text: str, limit: int) -> int:
    """How many code points of ``text`` fit in ``limit`` UTF-16 units."""
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > limit:
            return index
    return len(text)


def _cut_at(text: str, end: int) -> int:
    """Where to cut ``text`` so the first part is at most ``end`` code points."""
    candidates: list[int] = []
    lookahead = text[: end + 2]  # a boundary right at the end still counts
    for level, pattern in enumerate(_BOUNDARIES):
        positions = [(m.end() if level == 2 else m.start()) for m in pattern.finditer(lookahead)]
        positions = [p for p in positions if 0 < p <= end]
        if positions and max(positions) >= end // 2:
            return max(positions)
        candidates.extend(positions)
    return max(candidates) if candidates else end


def split_text(text: str, limit: int, max_parts: int = MAX_PARTS) -> list[str]:
    """``text`` in parts of at most ``limit`` UTF-16 units each, at most ``max_parts``."""
    if limit < 2 * units(SHORTENED):
        raise ValueError(f"limit {limit} is too small to split into")
    rest = text.strip()
    parts: list[str] = []
    while rest and units(rest) > limit:
        if len(parts) == max_parts - 1:
            room = _fitting(rest, limit - units(SHORTENED))
            parts.append(rest[: _cut_at(rest, room)].rstrip() + SHORTENED)
            return parts
        cut = _cut_at(rest, _fitting(rest, limit))
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].strip()
    if rest:
        parts.append(rest)
    return parts


def source_lines(citations: Sequence[Citation]) -> list[str]:
    """``[1] refunds.md › Returns``: one short line per cited source, by number."""
    lines = []
    for citation in sorted(citations, key=lambda c: c.number):
        where = f" › {citation.heading_path[-1]}" if citation.heading_path else ""
        line = f"[{citation.number}] {citation.document_name}{where}"
        if len(line) > SOURCE_LINE_CHARS:
            line = line[: SOURCE_LINE_CHARS - 1] + "…"
        lines.append(line)
    return lines


def render_reply(answer: str, citations: Sequence[Citation], limit: int) -> list[str]:
    """The answer and its short source list, cut into parts that fit ``limit``."""
    text = answer.strip()
    lines = source_lines(citations)
    if lines:
        text += "\n\nSources:\n" + "\n".join(lines)
    return split_text(text, limit)
