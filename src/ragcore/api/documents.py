"""/documents: a document added as JSON text or as an uploaded file, and as listed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, Protocol
from urllib.parse import urlencode

import attrs

from ragcore.api.problems import Problem, ProblemError
from ragcore.converter import listing, refusal, unless_sent
from ragcore.errors import InvalidInput
from ragcore.inputs import HAS_WORD
from ragcore.jobs import JobStatus
from ragcore.knowledge.documents import (
    MAX_NAME_CHARS,
    MAX_SOURCE_URL_CHARS,
    NAME_REFUSAL,
    NO_WORDS,
    SOURCE_URL_PATTERN,
    TEXT_REFUSAL,
    Format,
    StoredDocument,
    check_name,
    check_source_url,
    detect_format,
    supported_formats,
    upload_name,
)
from ragcore.schema import described
from ragcore.schema import text as text_schema

SOURCE_URL = "where the document is published (an http(s) page): its citations link there"
SOURCE_URL_SCHEMA = {"maxLength": MAX_SOURCE_URL_CHARS, "pattern": SOURCE_URL_PATTERN}
REPLACE_DESCRIPTION = (
    "true: replace the documents holding this name (they are deleted with their chunks as "
    "this one is stored); false: a name held by a document of other content is refused "
    "(409 naming it)"
)


@listing(words="allowed")
@attrs.frozen
class NewDocument:
    name: Annotated[str, text_schema(MAX_NAME_CHARS)] = attrs.field(metadata=refusal(NAME_REFUSAL))
    text: Annotated[str, described("plain text or markdown", pattern=HAS_WORD)] = attrs.field(
        metadata=refusal(TEXT_REFUSAL)
    )
    replace: Annotated[bool, described(REPLACE_DESCRIPTION)] = False
    source_url: Annotated[str | None, described(SOURCE_URL, **SOURCE_URL_SCHEMA)] = attrs.field(
        default=None, converter=check_source_url
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
    replace: Annotated[str, described(REPLACE_DESCRIPTION, enum=["true", "false"])] = "false"
    source_url: Annotated[str, described(SOURCE_URL, **SOURCE_URL_SCHEMA)] = ""


def form_flag(value: str, field: str) -> bool:
    """A yes/no form field (``true`` or ``false``); InvalidInput naming ``field`` else."""
    if value.strip().lower() not in ("true", "false"):
        raise InvalidInput(field, f"must be true or false, not {value[:20]!r}")
    return value.strip().lower() == "true"


@listing(words="allowed")
@attrs.frozen
class DocumentChange:
    """The fields to change: a new name, where it is published ("" for nowhere)."""

    name: Annotated[str | None, text_schema(MAX_NAME_CHARS)] = unless_sent(
        lambda value: check_name(value).strip()
    )
    source_url: Annotated[
        str | None, described(SOURCE_URL + '; "" says nowhere', **SOURCE_URL_SCHEMA)
    ] = unless_sent(lambda value: check_source_url(value) or "")


@attrs.frozen
class Document:
    id: int
    name: str
    chunk_count: int
    content_type: Annotated[str, described("media type of the file it was read from")] = ""
    size_bytes: Annotated[int, described("size of that file (of the text, when sent as JSON)")] = 0
    created_at: datetime | None = None
    source_url: Annotated[
        str | None, described("where it is published; left out when not said")
    ] = unless_sent()

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
            source_url=doc.source_url,
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
    replaced: Annotated[
        list[Document],
        described(
            "with replace: the documents that held this name until now (the older version), "
            "deleted with their chunks as this one was stored; empty when none did"
        ),
    ] = attrs.Factory(list)

    @classmethod
    def added(cls, doc: StoredDocument) -> DocumentAdded:
        """The stored document as the response to adding it."""
        replaced = [Document.of(old) for old in doc.replaced]
        return cls.of(doc, duplicate=not doc.created, replaced=replaced)  # type: ignore[no-any-return]


@attrs.frozen
class DocumentJob:
    """An upload ingested in the background (larger than INGEST_JOB_BYTES)."""

    id: int
    status: Annotated[
        JobStatus,
        described(
            "queued (waiting for the job before it), running, then done, failed or "
            "cancelled (DELETE /jobs/{id}: nothing of the document is stored)"
        ),
    ]
    name: Annotated[str, described("the document's name")]
    size_bytes: Annotated[int, described("the uploaded file's size")]
    chunks_done: Annotated[int, described("chunks embedded so far")]
    chunks_total: Annotated[int, described("chunks the document makes; 0 until it is read")]
    document: Annotated[
        DocumentAdded | None,
        described("once done: what a small upload answers (duplicate, replaced as there)"),
    ]
    problem: Annotated[Problem | None, described("once failed: why, as a problem+json body")]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@attrs.frozen
class DocumentWithText(Document):
    text: Annotated[str, described("the text as read from the file, headings as #")] = ""


MAX_DOCUMENTS_PAGE = 200
MAX_OFFSET = 2**31 - 1
#: GET /documents' orders: by when they were added (their id), the first one first
ORDERS = ("oldest", "newest")
DEFAULT_ORDER = "oldest"


@attrs.frozen
class DocumentsQuery:
    limit: Annotated[
        int, described("documents per page", minimum=1, maximum=MAX_DOCUMENTS_PAGE)
    ] = 50
    offset: Annotated[
        int,
        described("documents to skip (next has the next page's)", minimum=0, maximum=MAX_OFFSET),
    ] = 0
    q: Annotated[
        str,
        described(
            "only documents whose name contains this, in any case (% and _ are plain characters)",
            maxLength=MAX_NAME_CHARS,
        ),
    ] = ""
    order: Annotated[
        str,
        described("oldest: the first added first; newest: the last added first", enum=list(ORDERS)),
    ] = DEFAULT_ORDER


@attrs.frozen
class Documents:
    documents: list[Document]
    total: Annotated[int, described("how many documents match, on all pages")] = 0
    next: Annotated[str | None, described("the path of the next page; null on the last")] = None


class PagedQuery(Protocol):
    """A listing's query paged by ``limit`` and ``offset``, searched by ``q``."""

    @property
    def limit(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def q(self) -> str: ...


def next_page(
    query: PagedQuery,
    shown: int,
    total: int,
    path: str = "/documents",
    carried: Mapping[str, str] | None = None,
) -> str | None:
    """The path of the page after the one showing ``shown`` items from ``query.offset``
    of ``total``, with ``query.q`` and the other parameters ``carried`` (those given);
    None when it was the last."""
    after = query.offset + shown
    if shown == 0 or after >= total:
        return None
    params = {"limit": str(query.limit), "offset": str(after)}
    if query.q:
        params["q"] = query.q
    params.update({name: value for name, value in (carried or {}).items() if value})
    return f"{path}?" + urlencode(params)


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


def upload_names(
    files: int, file_as_text: bool, filename: str | None, name: str
) -> tuple[str, str]:
    """The document's name and the file's of a multipart upload with ``files`` file parts
    (``file_as_text``: a ``file`` field sent as text instead) and the ``name`` field."""
    if not files:
        detail = "must be a file part (with a filename)" if file_as_text else "is required"
        raise InvalidInput("file", f"{detail}: the document to add, as a multipart file part")
    if files > 1:
        raise InvalidInput("file", "send one file per request")
    filename = upload_name(filename or "")
    name = name.strip() or filename
    if not name:
        raise InvalidInput("name", "is required: give the file a filename or send a name field")
    return name, filename


def upload_format(
    name: str, filename: str, declared: str | None, data: bytes, limit: int
) -> Format:
    """How to read an uploaded file: by its filename, declared type and first bytes; a
    413 over MAX_UPLOAD_BYTES, a 422 when empty, a 415 when no format reads it."""
    check_size("file", len(data), limit)
    if not data:
        raise InvalidInput("file", "is empty")
    fmt = detect_format(filename or name, declared, data[:1024]) or detect_format(name, None)
    if fmt is None:
        kind = declared or "of no declared type"
        raise ProblemError(
            415, f"{name} is {kind}, which cannot be read; supported: {supported_formats()}"
        )
    return fmt


@contextmanager
def said_of_the_file() -> Iterator[None]:
    """A fault in an upload's text is reported as the file's: it is the file's text."""
    try:
        yield
    except InvalidInput as error:
        if error.field != "text":
            raise
        reason = "has no text to index" if error.message == NO_WORDS else error.message
        raise InvalidInput("file", reason) from None
