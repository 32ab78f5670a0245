"""What the caller hears: the answer cut into sentences as it is written, each said as
soon as it is whole, in words a voice can say.

The model's text arrives in pieces (``SentenceSplitter.feed``); a sentence goes to
text-to-speech the moment its end is certain, so the caller hears the first sentence
while the rest is being written. Citation markers (``[1]``, ``[1, 2]``) and markdown are
not read aloud; the turn's record keeps the citations.
"""

from __future__ import annotations

import re

#: a sentence this long with no end in sight is cut at a clause boundary (a comma, a
#: semicolon) so speech can start; a voice cannot wait for a 600-character sentence
LONG_SENTENCE_CHARS = 200
#: a piece shorter than this is not said on its own ("1." of a list, "Yes.")
MIN_SENTENCE_CHARS = 12

_CITATION = re.compile(r"\s*\[\d+(?:\s*[,;-]\s*\d+)*\]")
_OPEN_CITATION = re.compile(r"\[[\d,;\s-]*$")
_MARKDOWN = re.compile(r"(\*\*|__|`|^#+\s+|^\s*[-*•]\s+)", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\((?:https?://)?[^)]*\)")
_URL = re.compile(r"https?://\S+")
_SPACES = re.compile(r"\s+")
# a sentence ends at . ! ? (or their CJK forms) followed by a space or the end; not after
# a lone capital (initials), a known abbreviation, or inside a number ("3.5")
_END = re.compile(r"([.!?…。！？])[\"')\]]*(?=\s)")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st no nr vs etc e.g i.e approx inc ltd co jr sr dept fig min max".split()
)
_CLAUSE = re.compile(r"[,;:]\s")


def spoken(text: str) -> str:
    """``text`` as it should be said: no citation markers, markdown or bare URLs."""
    text = _LINK.sub(r"\1", text)
    text = _CITATION.sub("", text)
    text = _URL.sub("the link in our documents", text)
    text = _MARKDOWN.sub("", text)
    return _SPACES.sub(" ", text).strip()


class SentenceSplitter:
    """Cuts streamed text into sentences (``feed``), then gives what is left (``flush``)."""

    def __init__(self) -> None:
        self._text = ""

    def feed(self, piece: str) -> list[str]:
        """The sentences ``piece`` completes, in order, as they should be said."""
        self._text += piece
        sentences = []
        while (cut := self._cut()) is not None:
            sentence, self._text = self._text[:cut], self._text[cut:]
            said = spoken(sentence)
            if said:
                sentences.append(said)
        return sentences

    def flush(self) -> list[str]:
        """What remains once the answer is whole."""
        rest, self._text = self._text, ""
        said = spoken(rest)
        return [said] if said else []

    def _cut(self) -> int | None:
        """Where the first whole sentence ends (after its citation markers), or None."""
        text = self._text
        if (open_marker := _OPEN_CITATION.search(text)) is not None:
            # "[1" may still become "[1, 2]": hold the text back until it closes
            text = text[: open_marker.start()]
        for end in _END.finditer(text):
            stop = end.end()
            marker = _CITATION.match(text, stop)
            # a citation marker after the mark ends the sentence, abbreviation or not
            if marker is None and _abbreviation(text, end.start()):
                continue
            if len(spoken(text[:stop])) < MIN_SENTENCE_CHARS:
                continue
            if marker is not None:
                stop = marker.end()
            if stop >= len(text):
                return None  # the marker or what follows may not have arrived yet
            return stop
        if len(text) > LONG_SENTENCE_CHARS:
            clauses = [m.end() for m in _CLAUSE.finditer(text, 0, LONG_SENTENCE_CHARS)]
            if clauses:
                return clauses[-1]
            space = text.rfind(" ", 0, LONG_SENTENCE_CHARS)
            return space if space > 0 else LONG_SENTENCE_CHARS
        return None


def _abbreviation(text: str, dot: int) -> bool:
    """Whether the mark at ``dot`` ends an abbreviation or an initial, not a sentence."""
    if text[dot] != ".":
        return False
    word = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if word is None:
        return False
    token = word.group(1)
    return token.lower() in _ABBREVIATIONS or (len(token) == 1 and token.isupper())
