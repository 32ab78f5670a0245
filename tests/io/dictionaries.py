"""FreeDict dictionaries for the tests, written in dictd's format as dictfmt writes them."""

from __future__ import annotations

import gzip
from pathlib import Path

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 64)
        digits = B64[digit] + digits
        if not number:
            return digits


def write_dictionary(folder: Path, entries: list[str], code: str = "deu") -> None:
    """A dictionary as dictfmt writes it: the entries one after the other, compressed,
    and an index line per headword (sorted) with the entry's offset and length."""
    data, lines, offset = b"", [], 0
    for entry in entries:
        raw = entry.encode()
        headword = entry.split(" /", 1)[0].lower()
        lines.append(f"{headword}\t{b64(offset)}\t{b64(len(raw))}\n")
        data, offset = data + raw, offset + len(raw)
    folder.mkdir(exist_ok=True)
    (folder / f"freedict-{code}-eng.index").write_text("".join(sorted(lines)), encoding="utf-8")
    (folder / f"freedict-{code}-eng.dict.dz").write_bytes(gzip.compress(data))
