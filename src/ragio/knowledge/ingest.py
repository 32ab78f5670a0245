"""Adding many files at once (`ragchat ingest`, scripts/bench_ingest.py).

Files are read and chunked one by one in worker threads, then stored in groups:
the chunks of a whole group go to the embedder together (see
ragcore.knowledge.documents.store_new_documents), so a folder of small files
costs a few provider round trips rather than one per file. Each document is
still stored whole or not at all. A file whose name (its file's name) a stored document
of other content holds is reported, not stored, unless ``replace`` (``--replace``): then
it replaces that document; two files of one name in one run are one too many: the
later is reported, not stored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs
import trio

from ragcore.errors import InvalidInput
from ragcore.knowledge.documents import (
    NameTaken,
    NewDocument,
    prepare_document,
    store_new_documents,
)
from ragcore.knowledge.formats import document_languages
from ragcore.settings import Settings
from ragio.knowledge.files import find_files, read_document
from ragio.runner import run
from ragio.service import Service

#: how the command line asks to replace (NameTaken's advice)
REPLACE_BY_CLI = "run `ragchat ingest --replace`"
#: a group is stored once it holds this many chunks (or files)
GROUP_CHUNKS = 512
GROUP_FILES = 256
#: groups being embedded and stored at once: the embedder and the database overlap
GROUPS_IN_FLIGHT = 3


@attrs.define
class IngestReport:
    added: list[tuple[Path, int]] = attrs.Factory(list)  # (file, chunks)
    duplicates: list[tuple[Path, str]] = attrs.Factory(list)  # (file, the document it repeats)
    failed: list[tuple[Path, str]] = attrs.Factory(list)  # (file, why)
    # (file, the older version it replaced: "document 3, returns.md")
    replaced: list[tuple[Path, str]] = attrs.Factory(list)
    stopped: str | None = None  # why the run stopped early, if it did
    #: folders named that hold no file of a supported type (empty, hidden files only,
    #: or other types only: those are in ``failed``)
    empty_folders: list[Path] = attrs.Factory(list)

    @property
    def chunks(self) -> int:
        return sum(count for _, count in self.added)


async def ingest_paths(
    service: Service,
    paths: Iterable[Path],
    on_progress: Callable[[int, int], None] = lambda files, chunks: None,
    *,
    on_total: Callable[[int], None] = lambda files: None,
    replace: bool = False,
) -> IngestReport:
    """Add every supported file under ``paths``. ``on_total(files)`` is called once the
    files are found, ``on_progress(files, chunks)`` as each group is done (and for each
    file that fails). A file that cannot be added is reported and the rest go on; a
    provider or database failure stops the run (``stopped`` says why).

    While one group waits on the embedder or the database, the next is read and
    chunked, and up to GROUPS_IN_FLIGHT groups are being embedded and stored at once.
    """
    paths = list(paths)
    files, skipped = find_files(paths)
    empty = [p for p in paths if p.is_dir() and not any(f.is_relative_to(p) for f in files)]
    report = IngestReport(failed=list(skipped), empty_folders=empty)
    on_total(len(files))
    in_flight = trio.Semaphore(GROUPS_IN_FLIGHT)

    async def store_group(group: list[tuple[Path, NewDocument]]) -> None:
        try:
            docs = [doc for _, doc in group]
            pipeline = store_new_documents(docs, replace=replace, how_to_replace=REPLACE_BY_CLI)
            stored = await run(pipeline, service)
        except Exception as error:
            where = ", ".join(str(path) for path, _ in group[:3])
            report.stopped = (
                report.stopped or f"stopped at {where}: {type(error).__name__}: {error}"
            )
            raise _Stop from error
        finally:
            in_flight.release()
        for (path, _), result in zip(group, stored, strict=True):
            if isinstance(result, NameTaken):
                report.failed.append((path, str(result)))
            elif result.created:
                report.added.append((path, result.chunk_count))
                for old in result.replaced:
                    report.replaced.append((path, f"document {old.id}, {old.name}"))
            else:
                report.duplicates.append((path, f"document {result.id}, {result.name}"))
        on_progress(len(group), sum(len(doc.chunks) for doc in docs))

    try:
        async with trio.open_nursery() as nursery:
            group: list[tuple[Path, NewDocument]] = []
            named: dict[str, Path] = {}  # the file that holds each name in this run
            for path in files:
                try:
                    doc = await _read_and_chunk(path, service.settings)
                    if doc.name in named:
                        raise InvalidInput("name", same_name_in_run(named[doc.name]))
                except (InvalidInput, ValueError, OSError) as error:
                    report.failed.append((path, str(error)))
                    on_progress(1, 0)
                    continue
                named[doc.name] = path
                group.append((path, doc))
                chunks = sum(len(d.chunks) for _, d in group)
                if len(group) >= GROUP_FILES or chunks >= GROUP_CHUNKS:
                    await in_flight.acquire()
                    nursery.start_soon(store_group, group)
                    group = []
            if group:
                await in_flight.acquire()
                nursery.start_soon(store_group, group)
    except* _Stop:
        pass  # report.stopped says why; what was stored before stays stored
    return report


def same_name_in_run(first: Path) -> str:
    return (
        f"has the same name as {first}, added in this run; a name holds one document: "
        "rename one of them"
    )


class _Stop(Exception):
    """A group could not be stored: the run ends."""


async def _read_and_chunk(path: Path, settings: Settings) -> NewDocument:
    """No MAX_DOCUMENT_CHUNKS here: nobody waits on a request for it (see docs)."""
    text, fmt, size = await read_document(
        path,
        settings.max_upload_bytes,
        settings.max_document_read_seconds,
        document_languages(settings),
    )
    prepare = functools.partial(  # CPU-bound for a large file
        prepare_document, path.name, text, content_type=fmt.content_type, size_bytes=size
    )
    return await trio.to_thread.run_sync(prepare)
