"""Finding and reading the files `ragchat ingest` adds."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

TEXT_SUFFIXES = (".txt", ".md", ".markdown")


def find_files(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Files to ingest under ``paths`` (folders walked, sorted), and paths skipped with why."""
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                if child.suffix.lower() in TEXT_SUFFIXES:
                    found.append(child)
                else:
                    skipped.append(
                        (child, f"unsupported type; supported: {', '.join(TEXT_SUFFIXES)}")
                    )
        elif path.is_file():
            if path.suffix.lower() in TEXT_SUFFIXES:
                found.append(path)
            else:
                skipped.append((path, f"unsupported type; supported: {', '.join(TEXT_SUFFIXES)}"))
        else:
            skipped.append((path, "no such file or folder"))
    return found, skipped


def read_text(path: Path) -> str:
    """The file as UTF-8 text (a BOM is dropped); ValueError when it is not text."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
