"""Adding a document: know its format, check it, skip exact duplicates, chunk, embed, store
whole; replacing the document that held its name before (a name holds one current version)
only when asked to, since two different files may share a name.

The rules here are pure. Reading the bytes of a PDF or a Word file into text
happens in ``ragio.knowledge.formats``; what comes back is text with its
structure kept as markdown (``#`` headings, tables as markdown tables), which
``chunk_text`` follows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Generator, Sequence
from datetime import datetime
from typing import Any

import attrs

from ragcore.effects import Effect
from ragcore.errors import InvalidInput, TooLarge
from ragcore.inputs import SPACE, check_text_input, http_url_pattern
from ragcore.knowledge.chunking import (
    DEFAULT_OVERLAP_TOKENS,
    DEFAULT_TARGET_TOKENS,
    Chunk,
    chunk_text,
    count_tokens_lazily,
)
from ragcore.knowledge.effects import Embed
from ragcore.knowledge.graph import TeachGraph

MAX_NAME_CHARS = 255
NO_WORDS = "has no words to index"
# Texts per Embed effect: keeps each provider request small (OpenAI caps a request at
# 300k tokens) and lets a runner report progress. A failure in any batch stores nothing.
EMBED_BATCH = 512


@attrs.frozen
class StoredDocument:
    """Result of FindDocuments / StoreDocuments: the document as stored."""

    id: int
    name: str
    chunk_count: int
    created: bool  # False when the same content was already stored
    content_type: str = "text/plain"
    size_bytes: int = 0
    created_at: datetime | None = None
    #: the documents that held its name until it was stored, gone with their chunks
    replaced: tuple[StoredDocument, ...] = ()
    source_url: str | None = None


# --- formats -------------------------------------------------------------------------------

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


# The effects storing documents yields: looking them up, storing them with their chunks.


@attrs.frozen
class FindDocuments(Effect[list[StoredDocument | None]]):
    """Look documents up by content hash. Result: for each hash, its ``StoredDocument``
    or None, in order."""

    content_hashes: tuple[str, ...]


@attrs.frozen
class FindNamed(Effect[list[list[StoredDocument]]]):
    """Look documents up by name (exactly, as stored). Result: for each name, the documents
    that hold it, oldest first (none, or one; more only when stored before names were
    kept to one document)."""

    names: tuple[str, ...]


@attrs.frozen
class StoreDocument:
    """A document to store with its chunks and their vectors (see StoreDocuments).

    ``content_type`` and ``size_bytes`` describe the file the text was read from.
    """

    name: str
    content_hash: str
    text: str
    chunks: tuple[Chunk, ...]
    vectors: tuple[tuple[float, ...], ...]
    content_type: str = "text/plain"
    size_bytes: int = 0
    #: the ids of the documents holding ``name`` that it replaces (``replacing``'s choice)
    replaces: tuple[int, ...] = ()
    source_url: str | None = None


@attrs.frozen
class StoreDocuments(Effect[list[StoredDocument]]):
    """Store documents, each with all its chunks, in one transaction: all or nothing.
    The documents each replaces leave, chunks and all, in the same transaction: there is
    never a moment with both versions, nor one with neither.

    Result: a ``StoredDocument`` for each, in order (the one already stored when the same
    content was stored meanwhile). When the documents holding a name are no longer the
    ones ``replaces`` names (another upload of that name was stored meanwhile), nothing
    is stored and the runner reports the name as changed meanwhile. A group in one step
    is what makes bulk ingestion fast (scripts/bench_ingest.py).
    """

    documents: tuple[StoreDocument, ...]


@attrs.frozen
class Format:
    """A kind of file we can read: its name, the suffixes and media types that say it is one."""

    name: str
    content_type: str  # the canonical media type, stored with the document
    suffixes: tuple[str, ...]
    other_types: tuple[str, ...] = ()  # other media types clients send for it


FORMATS = (
    Format("text", "text/plain", (".txt", ".text")),
    Format("markdown", "text/markdown", (".md", ".markdown"), ("text/x-markdown",)),
    Format("html", "text/html", (".html", ".htm"), ("application/xhtml+xml",)),
    Format("pdf", "application/pdf", (".pdf",), ("application/x-pdf",)),
    Format("docx", DOCX, (".docx",)),
    Format("csv", "text/csv", (".csv",), ("application/csv", "text/comma-separated-values")),
    # read by OCR (ragio.knowledge.ocr), as a PDF page without a text layer is
    Format("png", "image/png", (".png",)),
    Format("jpeg", "image/jpeg", (".jpg", ".jpeg"), ("image/pjpeg",)),
    Format("tiff", "image/tiff", (".tif", ".tiff")),
)
#: how an image file of each format begins, for one sent with no telling name or type
IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
)
FORMAT_NAMED = {f.name: f for f in FORMATS}


def supported_formats() -> str:
    """The supported formats, for messages: 'txt, md, html, pdf, docx, csv, png, jpg, tif (…)'."""
    names = ", ".join(f.suffixes[0].lstrip(".") for f in FORMATS)
    types = ", ".join(f.content_type for f in FORMATS)
    return f"{names} ({types})"


def suffix_of(filename: str) -> str:
    """The lowercased suffix of the file's base name, with its dot; '' when it has none."""
    base = upload_name(filename)
    dot = base.rfind(".")
    return base[dot:].lower() if dot > 0 else ""


def format_for_suffix(filename: str) -> Format | None:
    suffix = suffix_of(filename)
    return next((f for f in FORMATS if suffix in f.suffixes), None) if suffix else None


def format_for_type(content_type: str | None) -> Format | None:
    """The format a media type names; parameters (``; charset=…``) and case do not count."""
    if not content_type:
        return None
    media = content_type.split(";", 1)[0].strip().lower()
    return next((f for f in FORMATS if media in (f.content_type, *f.other_types)), None)


def detect_format(
    filename: str | None, content_type: str | None, head: bytes = b""
) -> Format | None:
    """The format of an upload, or None when it is not one we read.

    The file name's suffix decides first (clients often send a generic media type),
    then the declared media type. A file with no suffix and no telling media type is
    looked at: a PDF or image signature makes it one, UTF-8 text without NUL bytes plain
    text.
    """
    if found := format_for_suffix(filename or ""):
        return found
    if found := format_for_type(content_type):
        return found
    if suffix_of(filename or ""):
        return None  # clip.mp4 sent as application/octet-stream: not ours
    if head.startswith(b"%PDF-"):
        return FORMAT_NAMED["pdf"]
    for signature, name in IMAGE_SIGNATURES:
        if head.startswith(signature):
            return FORMAT_NAMED[name]
    if head and b"\x00" not in head and _is_utf8_start(head):
        return FORMAT_NAMED["text"]
    return None


def _is_utf8_start(head: bytes) -> bool:
    """True when ``head`` is UTF-8, allowing a character cut off at its end."""
    for cut in range(4):
        try:
            head[: len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def upload_name(filename: str) -> str:
    """The base name of an uploaded file: clients may send a whole path (C:\\docs\\a.pdf)."""
    return filename.replace("\\", "/").rsplit("/", 1)[-1].strip()


def text_content_type(name: str) -> str:
    """The media type of a document sent as text: markdown for .md names, else plain text."""
    return "text/markdown" if suffix_of(name) in (".md", ".markdown") else "text/plain"


# --- adding ----------------------------------------------------------------------------------


def content_hash(text: str) -> str:
    """Identity of a document's content: line endings and outer blank space do not count."""
    normalized = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n"))
    return hashlib.sha256(normalized.strip().encode("utf-8")).hexdigest()


NAME_REFUSAL = "is required: a non-blank document name"
TEXT_REFUSAL = "is required: the document's text"


def check_name(name: Any) -> str:
    """A document's name as given (a new one, or a rename): not blank, not too long."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name", NAME_REFUSAL)
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput("name", f"is longer than {MAX_NAME_CHARS} characters")
    check_text_input(name, "name")
    return name


def check_document(name: Any, text: Any) -> tuple[str, str]:
    check_name(name)
    if not isinstance(text, str):
        raise InvalidInput("text", TEXT_REFUSAL)
    check_text_input(text, "text")  # text read from a file (UTF-16 may hold NUL) too
    if not any(ch.isalnum() for ch in text):  # ragcore.inputs.HAS_WORD, as a pattern
        raise InvalidInput("text", NO_WORDS)
    return name.strip(), text


@attrs.frozen
class NewDocument:
    """A document checked, hashed and chunked, ready for ``store_new_document``."""

    name: str
    text: str
    content_hash: str
    content_type: str
    size_bytes: int
    chunks: tuple[Chunk, ...]
    source_url: str | None = None


MAX_SOURCE_URL_CHARS = 2000


#: a source URL as a pattern: an http(s) URL (``http_url_pattern``: no user or
#: password, which a visitor would see), or blank for none
SOURCE_URL_PATTERN = f"^[{SPACE}]*$|{http_url_pattern()}"
_SOURCE_URL = re.compile(SOURCE_URL_PATTERN)


def check_source_url(value: Any, field: str = "source_url") -> str | None:
    """Where the document is published (a web page a citation may link to): an http(s)
    URL with a host (``SOURCE_URL_PATTERN``); None for blank."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_SOURCE_URL_CHARS:
        raise InvalidInput(
            field, f"must be the document's web address, at most {MAX_SOURCE_URL_CHARS} characters"
        )
    if not _SOURCE_URL.fullmatch(value):
        raise InvalidInput(
            field,
            "must be an http(s) address with a host, such as https://shop.example.com/returns",
        )
    return value.strip() or None


def prepare_document(
    name: Any,
    text: Any,
    *,
    content_type: str | None = None,
    size_bytes: int | None = None,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    max_chunks: int | None = None,
    field: str = "text",
    source_url: str | None = None,
) -> NewDocument:
    """Check, hash and chunk a document; InvalidInput when it cannot be one, TooLarge
    (naming ``field``, where the text came from) when it would make more than
    ``max_chunks`` chunks.

    ``content_type`` and ``size_bytes`` describe the file it was read from; without
    them the document is taken as sent as text (see ``text_content_type``). This is
    the CPU-heavy part of adding a large document (about 0.3 s a megabyte), so a
    runner calls it in a worker thread and then runs ``store_new_document``. A text
    that is sure to go over ``max_chunks`` is refused before it is chunked: no chunk
    holds more than ``target_tokens`` tokens, so it makes at least tokens/target chunks.
    """
    name, text = check_document(name, text)
    source_url = check_source_url(source_url)
    if max_chunks is not None:
        least = -(-count_tokens_lazily(text) // target_tokens)
        if least > max_chunks:
            raise _too_many_chunks(field, f"at least {least}", max_chunks)
    chunks = tuple(chunk_text(text, target_tokens, overlap_tokens))
    if max_chunks is not None and len(chunks) > max_chunks:
        raise _too_many_chunks(field, str(len(chunks)), max_chunks)
    return NewDocument(
        name=name,
        text=text,
        content_hash=content_hash(text),
        content_type=content_type or text_content_type(name),
        size_bytes=len(text.encode("utf-8")) if size_bytes is None else size_bytes,
        chunks=chunks,
        source_url=source_url,
    )


def _too_many_chunks(field: str, made: str, limit: int) -> TooLarge:
    return TooLarge(
        field,
        f"would make {made} chunks; one document added through the API may make {limit} "
        "(MAX_DOCUMENT_CHUNKS): split it into smaller documents, or add it with "
        "`ragchat ingest`",
    )


class NameTaken(Exception):
    """A document's name is held by other documents (``holders``, oldest first): an upload
    never silently deletes a different file that happens to share its name, unless asked
    to replace it (HTTP 409, ``ragchat ingest`` reports the file); a rename never makes
    two documents of one name. ``advice``: what to do instead."""

    def __init__(self, name: str, holders: Sequence[StoredDocument], advice: str):
        self.name = name
        self.holders = tuple(holders)
        first = self.holders[0]
        more = len(self.holders) - 1
        held = f"document {first.id}" + (f" and {more} more" if more else "")
        super().__init__(f"a different document named {name[:80]!r} is stored ({held}); {advice}")


def upload_advice(how_to_replace: str) -> str:
    """NameTaken's advice to an upload, given how its client asks to replace."""
    return f"nothing was stored: {how_to_replace} to replace it, or give this one another name"


#: how a client of the API asks to replace
REPLACE_BY_API = "send replace: true"
RENAME_ADVICE = "nothing was renamed: delete or rename that one first, or choose another name"


def replacing(
    same_content: StoredDocument | None,
    same_name: Sequence[StoredDocument],
    *,
    replace: bool,
    name: str = "",
    how_to_replace: str = REPLACE_BY_API,
) -> tuple[StoredDocument, ...] | None:
    """What a new document (named ``name``) replaces, given the document already holding
    its content (``same_content``) and those holding its name (``same_name``): None when
    nothing is to be stored, since the content is stored already (under this name or
    another: the re-upload is a no-op, and the response names that document); else the
    documents that leave as it is stored: every one holding its name when ``replace`` (a
    name holds one current version), none when no document holds it. A name held by
    another document without ``replace``: NameTaken."""
    if same_content is not None:
        return None
    if same_name and not replace:
        raise NameTaken(name, same_name, upload_advice(how_to_replace))
    return tuple(same_name)


def check_distinct_names(docs: Sequence[NewDocument]) -> None:
    """A group stored together may not hold two documents of one name: one would replace
    the other before anyone saw it (``ragchat ingest`` reports such a file instead)."""
    seen: set[str] = set()
    for doc in docs:
        if doc.name in seen:
            raise ValueError(f"two documents named {doc.name!r} in one group")
        seen.add(doc.name)


def store_new_documents(
    docs: Sequence[NewDocument], *, replace: bool = False, how_to_replace: str = REPLACE_BY_API
) -> Generator[
    FindDocuments | FindNamed | Embed | StoreDocuments | TeachGraph,
    Any,
    list[StoredDocument | NameTaken],
]:
    """Store each of ``docs`` unless the same content is stored already (then: that one).
    A document whose name another document holds replaces it when ``replace``; else it is
    not stored, and its result is the NameTaken saying so (``replacing``), while the rest
    of the group is stored.

    The new documents' chunks are embedded together, ``EMBED_BATCH`` at a time (the
    provider splits a batch to its own request limit and sends the parts
    concurrently), so many small documents cost few provider round trips; a chunk text
    repeated in the group is embedded once. Each
    document is stored with all its chunks in one step once every chunk of the
    group is embedded: a failure midway stores nothing.
    """
    check_distinct_names(docs)
    found: list[StoredDocument | None] = yield FindDocuments(tuple(d.content_hash for d in docs))
    candidates = [doc for doc, existing in zip(docs, found, strict=True) if existing is None]
    refused: dict[int, NameTaken] = {}  # by id() of a document not stored
    new: list[NewDocument] = []
    replaces: dict[int, tuple[StoredDocument, ...]] = {}  # by id() of a new document
    if candidates:
        named: list[list[StoredDocument]] = yield FindNamed(tuple(d.name for d in candidates))
        for doc, holders in zip(candidates, named, strict=True):
            try:
                replaced = replacing(
                    None, holders, replace=replace, name=doc.name, how_to_replace=how_to_replace
                )
            except NameTaken as taken:
                refused[id(doc)] = taken
                continue
            if all(doc.content_hash != n.content_hash for n in new):
                new.append(doc)
                replaces[id(doc)] = replaced or ()
    texts = [chunk.text for doc in new for chunk in doc.chunks]
    # A text repeated (a page's navigation, a footer) is embedded once.
    distinct = list(dict.fromkeys(texts))
    vector_of: dict[str, tuple[float, ...]] = {}
    for start in range(0, len(distinct), EMBED_BATCH):
        batch = tuple(distinct[start : start + EMBED_BATCH])
        embedded = yield Embed(batch, purpose="document")
        if len(embedded) != len(batch):
            raise ValueError(
                f"the embedder returned {len(embedded)} vectors for {len(batch)} texts"
            )
        vector_of.update(zip(batch, (tuple(v) for v in embedded), strict=True))
    vectors = [vector_of[text] for text in texts]
    to_store = []
    offset = 0
    for doc in new:
        doc_vectors = tuple(vectors[offset : offset + len(doc.chunks)])
        offset += len(doc.chunks)
        to_store.append(
            StoreDocument(
                name=doc.name,
                content_hash=doc.content_hash,
                text=doc.text,
                chunks=doc.chunks,
                vectors=doc_vectors,
                content_type=doc.content_type,
                size_bytes=doc.size_bytes,
                replaces=tuple(old.id for old in replaces[id(doc)]),
                source_url=doc.source_url,
            )
        )
    stored: dict[str, StoredDocument] = {}
    if to_store:
        saved = yield StoreDocuments(tuple(to_store))
        for doc, result in zip(new, saved, strict=True):
            if result.created:  # not when the same content was stored meanwhile
                result = attrs.evolve(result, replaced=replaces[id(doc)])
            stored[doc.content_hash] = result
        # the graph learns the new ones, and forgets the versions they replaced
        created = [
            (doc, result) for doc, result in zip(to_store, saved, strict=True) if result.created
        ]
        if created:
            yield TeachGraph(
                tuple(result.id for _, result in created),
                tuple(old for doc, _ in created for old in doc.replaces),
            )
    results: list[StoredDocument | NameTaken] = []
    firsts = {id(doc) for doc in new}
    for doc, existing in zip(docs, found, strict=True):
        if id(doc) in refused:
            results.append(refused[id(doc)])
            continue
        if existing is None:  # stored by this call; a copy later in the group is a duplicate
            existing = stored[doc.content_hash]
            existing = existing if id(doc) in firsts else attrs.evolve(existing, created=False)
        results.append(existing)
    return results


@attrs.frozen
class DeleteDocuments(Effect[list[StoredDocument]]):
    """Delete the document ``reference`` names, chunks and all: its id (an int); or, as
    the command line names one, its id or else its name (every document holding it).
    Result: the documents deleted (none: nothing matched)."""

    reference: int | str


def forget_documents(
    reference: int | str,
) -> Generator[DeleteDocuments | TeachGraph, Any, list[StoredDocument]]:
    """Delete the documents ``reference`` names, and what they gave the knowledge graph;
    the documents deleted (none: no such document)."""
    deleted: list[StoredDocument] = yield DeleteDocuments(reference)
    if deleted:
        yield TeachGraph((), tuple(doc.id for doc in deleted))
    return deleted


def store_new_document(
    doc: NewDocument, *, replace: bool = False
) -> Generator[
    FindDocuments | FindNamed | Embed | StoreDocuments | TeachGraph, Any, StoredDocument
]:
    """``store_new_documents`` for one document; NameTaken raised, not returned."""
    [stored] = yield from store_new_documents([doc], replace=replace)
    if isinstance(stored, NameTaken):
        raise stored
    return stored


def add_document(
    name: Any, text: Any, *, replace: bool = False, **options: Any
) -> Generator[
    FindDocuments | FindNamed | Embed | StoreDocuments | TeachGraph, Any, StoredDocument
]:
    """``prepare_document`` then ``store_new_document``, in one pipeline (small texts)."""
    doc = prepare_document(name, text, **options)
    return (yield from store_new_document(doc, replace=replace))
