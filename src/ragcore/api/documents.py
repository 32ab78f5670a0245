"""/documents: a document added as JSON text or as an uploaded file, and as listed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from ragcore.api.schema import described
from ragcore.knowledge.documents import MAX_NAME_CHARS, StoredDocument, supported_formats


@attrs.frozen
class NewDocument:
    name: str = described(maxLength=MAX_NAME_CHARS)
    text: str = described("plain text or markdown")


@attrs.frozen
class DocumentUpload:
    file: bytes = described(f"{supported_formats()}; at most MAX_UPLOAD_BYTES (default 25 MB)")
    name: str = described(
        "the document's name; default: the file's name", maxLength=MAX_NAME_CHARS, default=""
    )


@attrs.frozen
class Document:
    id: int
    name: str
    chunk_count: int
    content_type: str = described("media type of the file it was read from", default="")
    size_bytes: int = described("size of that file (of the text, when sent as JSON)", default=0)
    created_at: datetime | None = None

    @classmethod
    def of(cls, doc: StoredDocument, **extra: Any) -> Any:
        """The stored document as this shape; ``extra``: the fields a subclass adds."""
        return cls(
            doc.id,
            doc.name,
            doc.chunk_count,
            doc.content_type,
            doc.size_bytes,
            doc.created_at,
            **extra,
        )


@attrs.frozen
class DocumentAdded(Document):
    duplicate: bool = described(
        "true when the same content was already stored: the response describes that "
        "document, nothing was added",
        default=False,
    )


@attrs.frozen
class DocumentWithText(Document):
    text: str = described("the text as read from the file, headings as #", default="")


@attrs.frozen
class Documents:
    documents: list[Document]
