"""Adding a document: check it, skip exact duplicates, chunk, embed, store whole."""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from typing import Any

import attrs

from ragcore.effects import Embed, FindDocument, StoreDocument
from ragcore.errors import InvalidInput
from ragcore.knowledge.chunking import chunk_text

MAX_NAME_CHARS = 255


@attrs.frozen
class StoredDocument:
    """Result of FindDocument / StoreDocument."""

    id: int
    name: str
    chunk_count: int
    created: bool


def content_hash(text: str) -> str:
    """Identity of a document's content: line endings and outer blank space do not count."""
    normalized = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n"))
    return hashlib.sha256(normalized.strip().encode("utf-8")).hexdigest()


def check_document(name: Any, text: Any) -> tuple[str, str]:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name", "is required: a non-blank document name")
    if len(name.strip()) > MAX_NAME_CHARS:
        raise InvalidInput("name", f"is longer than {MAX_NAME_CHARS} characters")
    if not isinstance(text, str):
        raise InvalidInput("text", "is required: the document's text")
    if not any(ch.isalnum() for ch in text):
        raise InvalidInput("text", "has no words to index")
    return name.strip(), text


def add_document(
    name: Any, text: Any
) -> Generator[FindDocument | Embed | StoreDocument, Any, StoredDocument]:
    name, text = check_document(name, text)
    digest = content_hash(text)
    existing: StoredDocument | None = yield FindDocument(digest)
    if existing is not None:
        return existing
    chunks = tuple(chunk_text(text))
    vectors = yield Embed(tuple(chunk.text for chunk in chunks), purpose="document")
    stored: StoredDocument = yield StoreDocument(
        name=name,
        content_hash=digest,
        text=text,
        chunks=chunks,
        vectors=tuple(tuple(v) for v in vectors),
    )
    return stored
