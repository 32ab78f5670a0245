"""Finding and reading the files `ragchat ingest` adds: every format ragchat reads."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import trio

from ragcore.errors import InvalidInput
from ragcore.knowledge.documents import Format, format_for_suffix, supported_formats
from ragio.knowledge.formats import ENGLISH, read_upload


def find_files(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Files to ingest under ``paths`` (folders walked, sorted), and paths skipped with why.

    In a folder, hidden files and folders (a name starting with '.') are left out, and a
    file is taken when its suffix is one of a supported format. A file named on the
    command line is taken or refused the same way.
    """
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    unsupported = f"unsupported type; supported: {supported_formats()}"
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                if format_for_suffix(child.name):
                    found.append(child)
                else:
                    skipped.append((child, unsupported))
        elif path.is_file():
            if format_for_suffix(path.name):
                found.append(path)
            else:
                skipped.append((path, unsupported))
        else:
            skipped.append((path, "no such file or folder"))
    return found, skipped


async def read_document(
    path: Path, max_bytes: int, seconds: float, languages: tuple[str, ...] = ENGLISH
) -> tuple[str, Format, int]:
    """The file's text (structure kept, see ``ragio.knowledge.formats``), format and size.

    InvalidInput (field ``file``) when it is over ``max_bytes`` (MAX_UPLOAD_BYTES, the
    same limit as uploads), takes over ``seconds`` to read (MAX_DOCUMENT_READ_SECONDS)
    or cannot be read as its suffix says; OSError when unreadable. ``languages``: the
    documents', for OCR.
    """
    fmt = format_for_suffix(path.name)
    if fmt is None:
        raise InvalidInput("file", f"unsupported type; supported: {supported_formats()}")
    size = (await trio.Path(path).stat()).st_size
    if size > max_bytes:
        raise InvalidInput("file", f"is {size} bytes; the limit is {max_bytes} (MAX_UPLOAD_BYTES)")
    data = await trio.Path(path).read_bytes()
    return await read_upload(data, fmt, seconds=seconds, languages=languages), fmt, len(data)
