"""/documents: a document added as JSON text or as an uploaded file, and as listed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import attrs

from ragcore.api.converter import listing, refusal
from ragcore.api.problems import ProblemError
from ragcore.api.schema import described
from ragcore.knowledge.documents import (
    MAX_NAME_CHARS,
    NAME_REFUSAL,
    TEXT_REFUSAL,
    StoredDocument,
    supported_formats,
)


@listing(words="allowed")
@attrs.frozen
class NewDocument:
    name: Annotated[str, described(maxLength=MAX_NAME_CHARS)] = attrs.field(
        metadata=refusal(NAME_REFUSAL)
    )
    text: Annotated[str, described("plain text or markdown")] = attrs.field(
        metadata=refusal(TEXT_REFUSAL)
    )


@listing(words="allowed")
@attrs.frozen
class DocumentUpload:
    file: Annotated[
        bytes, described(f"{supported_formats()}; at most MAX_UPLOAD_BYTES (default 25 MB)")
    ]
    name: Annotated[
        str, described("the document's name; default: the file's name", maxLength=MAX_NAME_CHARS)
    ] = ""


@attrs.frozen
class Document:
    id: int
    name: str
    chunk_count: int
    content_type: Annotated[str, described("media type of the file it was read from")] = ""
    size_bytes: Annotated[int, described("size of that file (of the text, when sent as JSON)")] = 0
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
    duplicate: Annotated[
        bool,
        described(
            "true when the same content was already stored: the response describes that "
            "document, nothing was added"
        ),
    ] = False


@attrs.frozen
class DocumentWithText(Document):
    text: Annotated[str, described("the text as read from the file, headings as #")] = ""


@attrs.frozen
class Documents:
    documents: list[Document]


def check_size(what: str, size: int, limit: int) -> None:
    """A 413 problem when the body or file (``what``) is over MAX_UPLOAD_BYTES."""
    if size > limit:
        raise ProblemError(
            413, f"the {what} is {size} bytes; the limit is {limit} (MAX_UPLOAD_BYTES)"
        )


def check_json_media_type(mimetype: str) -> None:
    """A 415 problem for a body that is neither JSON nor a multipart upload."""
    if mimetype not in ("", "application/json") and not mimetype.endswith("+json"):
        raise ProblemError(
            415,
            "send application/json with name and text, or a multipart/form-data upload "
            f"with the document in a field named file; not {mimetype}",
        )
