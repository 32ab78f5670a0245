"""Reading an uploaded file into text, keeping the structure the chunker follows.

What comes out is markdown-shaped text: headings as ``#`` lines (so chunks of
HTML and Word files get a heading path), paragraphs separated by blank lines,
and tables as markdown tables (``ragcore.knowledge.chunking.table_markdown``:
the chunker keeps rows whole and names each row's cells by the header row). A PDF's
pages become ``# Page N`` sections, so a citation can say which page it came
from. In text taken from a PDF, a Word file, HTML or a CSV, a line that merely
begins with ``# `` or ``|`` is escaped so it does not become a heading or a table.

Libraries, chosen small and maintained:

- PDF: ``pypdf``, pure Python with no system library, reads the text layer. A page
  with next to no text layer and an image (a scan, ``is_scanned``) is read by OCR
  (``ragio.knowledge.ocr``: Tesseract) from its images, which pypdf gives decoded. A
  page whose drawing holds rectangles and lines enough for a ruled table (its content
  stream scanned, cheap) is laid out by ``pdfplumber`` (on pdfminer, about 60 ms a
  page, so at most MAX_TABLE_PAGES a file), which finds its tables: the page becomes
  its text around them and their rows (``PageWithTables``). Unruled tables stay text.
- Images (PNG, JPEG, TIFF, a TIFF's pages): decoded by Pillow, read by OCR. The
  documents' languages (LANGUAGE_DETECTION_SUPPORTED_LANGUAGES, else DEFAULT_LANGUAGE)
  are the languages OCR reads, those of them installed. Without Tesseract, an image
  or a PDF with no text layer is refused (422) naming what to install; a PDF with a
  text layer on some pages is read from those.
- Word: ``python-docx`` (on lxml), which gives paragraphs with their styles and
  tables in body order (``iter_inner_content``). Title and Heading N styles (or
  styles based on them) become headings, List styles ``- `` items. Headers,
  footers, footnotes, comments, text boxes and tables nested in a cell are left out.
- HTML: the standard library's ``html.parser``. We only need a single pass over
  tags to emit headings, blocks, list items and table rows; it tolerates broken
  markup, and selectolax or BeautifulSoup would add a dependency (and, for
  BeautifulSoup, a whole tree) for no gain here.
- CSV: the standard library's ``csv``, with the delimiter sniffed among
  ``, ; TAB |`` (spreadsheets in many locales export ``;``); the first row is
  taken as the header.

Text is read as UTF-8 (a BOM, UTF-16 with a BOM or a declared charset win);
failing that as Windows-1252, the usual legacy export, before giving up.

What is decided over bytes and text already in memory (decoding, HTML, CSV, how pages
and paragraphs become text, the bounds) is ``ragcore.knowledge.formats``; here the PDF
and Word libraries are called. Parsing is CPU-bound: async code calls ``read_upload``, which runs
``extract_text`` in a worker thread so the Trio loop stays free.

The work one file may cause is bounded, so a small file cannot keep a core busy for
minutes (a 66 KB Word file whose XML unpacks to 10 MB of 150,000 paragraphs took
9.5 minutes before): a Word file's XML may unpack to at most MAX_DOCX_XML_BYTES and
hold at most MAX_BLOCKS paragraphs and table rows, a PDF at most MAX_PDF_PAGES pages,
OCR at most MAX_OCR_PAGES pages of MAX_OCR_PIXELS pixels each (checked before an image
is decoded), and reading any file at most MAX_DOCUMENT_READ_SECONDS (checked between
paragraphs, pages, rows and pieces of HTML, and while Tesseract runs); each is a
``TooLarge`` (HTTP 413) that says which.
The same checks stop the reading as soon as the request that waits for it is
cancelled (its client went away), instead of finishing work nobody will read.
"""

from __future__ import annotations

import functools
import io
import logging
import re
import time
import zipfile
import zlib

import trio

from ragcore.errors import InvalidInput, TooLarge
from ragcore.knowledge.chunking import table_markdown
from ragcore.knowledge.documents import Format
from ragcore.knowledge.formats import (
    CHECK_EVERY,
    MAX_TABLE_PAGES,
    MIN_TABLE_RULES,
    Check,
    PageWithTables,
    PdfPage,
    Unreadable,
    check_block_count,
    check_ocr_pages,
    check_package_size,
    check_page_count,
    csv_text,
    decode_text,
    heading_level,
    html_charset,
    html_text,
    image_text,
    is_scanned,
    paragraph_line,
    pdf_text,
    short_reason,
    unchecked,
)
from ragio.knowledge import ocr

log = logging.getLogger(__name__)
#: what OCR reads when no language is said: the default DEFAULT_LANGUAGE
ENGLISH = ("en",)
#: a rectangle (``re``) or a line segment (``l``) in a page's content stream
_RULES = re.compile(rb"\s(?:re|l)\s")


def reading_check(seconds: float) -> Check:
    """The check a worker thread reading a file calls between pieces of work: it raises
    ``trio.Cancelled`` once the task waiting for the thread is cancelled, and TooLarge
    once ``seconds`` have passed."""
    deadline = time.monotonic() + seconds

    def check() -> None:
        trio.from_thread.check_cancelled()
        if time.monotonic() > deadline:
            raise TooLarge(
                "file",
                f"took longer than {seconds:g} s to read (MAX_DOCUMENT_READ_SECONDS): split "
                "it into smaller files, or save it as plain text",
            )

    return check


async def read_upload(
    data: bytes,
    fmt: Format,
    charset: str | None = None,
    *,
    seconds: float,
    languages: tuple[str, ...] = ENGLISH,
) -> str:
    """``extract_text`` in a worker thread, for at most ``seconds``; cancelling the
    calling task stops the reading at its next check."""
    read = functools.partial(
        extract_text, data, fmt, charset, check=reading_check(seconds), languages=languages
    )
    return await trio.to_thread.run_sync(read)


def extract_text(
    data: bytes,
    fmt: Format,
    charset: str | None = None,
    *,
    check: Check = unchecked,
    languages: tuple[str, ...] = ENGLISH,
) -> str:
    """The text of ``data`` read as ``fmt``; Unreadable when it cannot be read as that,
    TooLarge past a bound (see the module's docstring).

    ``charset`` is the one the client declared, if any (text formats only). ``check`` is
    called between pieces of work (``reading_check``). ``languages``: those the
    documents are in (ISO 639-1 codes), for OCR.
    """
    if not data:
        raise Unreadable("is empty")
    if fmt.name == "pdf":
        return _pdf(data, check, languages)
    if fmt.name in IMAGES:
        return _image(data, check, languages)
    if fmt.name == "docx":
        return _docx(data, check)
    if fmt.name == "html":
        return html_text(decode_text(data, charset or html_charset(data)), check)
    text = decode_text(data, charset)
    if fmt.name == "csv":
        return csv_text(text, check)
    return text.replace("\r\n", "\n")


# --- PDF --------------------------------------------------------------------------------------


def _pdf(data: bytes, check: Check, languages: tuple[str, ...]) -> str:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    if b"%PDF-" not in data[:1024]:
        raise Unreadable("is not a PDF: it does not start with %PDF-")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("is password-protected; remove the password and send it again")
        check_page_count(len(reader.pages))
        pages: list[PdfPage] = []
        scanned: list[int] = []
        for number, page in enumerate(reader.pages):
            check()
            text = page.extract_text() or ""
            pages.append(text)
            if is_scanned(text, len(page.images)):
                scanned.append(number)
        if scanned:
            _read_scans(reader, pages, scanned, check, languages)
        ruled = [n for n, page in enumerate(reader.pages) if n not in scanned and _ruled(page)]
        if ruled:
            _read_tables(data, pages, ruled[:MAX_TABLE_PAGES], check)
    except (Unreadable, TooLarge):
        raise
    except FileNotDecryptedError:
        raise Unreadable("is password-protected; remove the password and send it again") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise Unreadable(f"is not a readable PDF ({short_reason(error)})") from None
    except (AssertionError, RecursionError, OverflowError, zlib.error) as error:
        raise Unreadable(f"is not a readable PDF ({short_reason(error)})") from None
    return pdf_text(pages)


def _ruled(page) -> bool:  # type: ignore[no-untyped-def]
    """Whether a page draws enough rectangles and lines to hold a ruled table (cheap: its
    content stream is scanned, not laid out)."""
    try:
        contents = page.get_contents()
        drawing = contents.get_data() if contents is not None else b""
    except Exception:  # noqa: BLE001 (a damaged stream: the page is read as text)
        return False
    return len(_RULES.findall(drawing)) >= MIN_TABLE_RULES


def _read_tables(data: bytes, pages: list[PdfPage], ruled: list[int], check: Check) -> None:
    """The ruled pages' tables, found by pdfplumber (on pdfminer): each such page becomes
    its text around the tables and the tables' rows (``PageWithTables``). A page where
    none is found, or that pdfplumber cannot lay out, keeps pypdf's text."""
    import pdfplumber

    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number in ruled:
                check()
                page = pdf.pages[number]
                tables = [t for t in page.find_tables() if _a_grid(t.extract())]
                if tables:
                    pages[number] = _page_with_tables(page, tables)
                page.close()
    except (TooLarge, trio.Cancelled):
        raise
    except Exception as error:  # noqa: BLE001 (pdfminer's many errors: the text stays)
        log.warning("a PDF's tables were not read: %s", short_reason(error))


def _a_grid(rows: list[list[str | None]]) -> bool:
    """A table of two rows and two columns at least: a box drawn around a paragraph or a
    code listing is one cell, and stays text."""
    return len(rows) >= 2 and max(len(row) for row in rows) >= 2


def _page_with_tables(page, tables) -> PageWithTables:  # type: ignore[no-untyped-def]
    """A page as its text above, between and below its tables, and the tables' rows."""
    left, top, right, bottom = page.bbox
    parts: list[str | tuple[tuple[str, ...], ...]] = []
    for table in sorted(tables, key=lambda t: t.bbox[1]):
        if table.bbox[1] > top:
            parts.append(page.crop((left, top, right, table.bbox[1])).extract_text() or "")
        rows = table.extract()
        parts.append(tuple(tuple(cell or "" for cell in row) for row in rows))
        top = max(top, table.bbox[3])
    if top < bottom:
        parts.append(page.crop((left, top, right, bottom)).extract_text() or "")
    return PageWithTables(tuple(parts))


def _read_scans(reader, pages: list[PdfPage], scanned: list[int], check: Check, languages) -> None:  # type: ignore[no-untyped-def]
    """The scanned pages' text (``pages`` at ``scanned``) read by OCR from their images.
    Without Tesseract, a PDF with a text layer on other pages is read from those."""
    check_ocr_pages(len(scanned))
    try:
        tesseract = ocr.tesseract_languages(languages)
    except Unreadable:
        if len(scanned) < len(pages):
            log.warning("%d scanned PDF pages left out: OCR is not installed", len(scanned))
            return
        raise
    for number in scanned:
        check()
        pages[number] = _read_scan(reader.pages[number], tesseract, check) or pages[number]


def _read_scan(page, tesseract: str, check: Check) -> str:  # type: ignore[no-untyped-def]
    """What OCR reads in a page's images; "" when they cannot be decoded (a JBIG2 scan
    pypdf does not decode, a damaged one): the page is left as its text layer says."""
    try:
        return "\n\n".join(
            ocr.read_image(image, tesseract, check) for image in ocr.pdf_page_images(page)
        )
    except InvalidInput:  # a bound passed (TooLarge), or OCR failed: the file's problem
        raise
    except (OSError, ValueError, NotImplementedError, KeyError, TypeError) as error:
        log.warning("a scanned PDF page left out: its image is unreadable: %s", short_reason(error))
        return ""


# --- images -----------------------------------------------------------------------------------

IMAGES = frozenset({"png", "jpeg", "tiff"})


def _image(data: bytes, check: Check, languages: tuple[str, ...]) -> str:
    tesseract = ocr.tesseract_languages(languages)
    frames = ocr.image_frames(data, check)
    return image_text([ocr.read_image(frame, tesseract, check) for frame in frames])


# --- Word -------------------------------------------------------------------------------------


def _docx(data: bytes, check: Check) -> str:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.text.paragraph import Paragraph

    _check_package(data)
    try:
        document = docx.Document(io.BytesIO(data))
        # counted in the parsed tree first (lxml, fast): a bomb is refused before any is read
        blocks_in_body = int(document.element.body.xpath("count(.//w:p | .//w:tr)"))
        check_block_count(blocks_in_body)
        kinds = _StyleKinds()
        blocks: list[str] = []
        read, next_check = 0, CHECK_EVERY  # paragraphs and table rows
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                blocks.append(_docx_paragraph(item, kinds))
                read += 1
            else:
                rows = _docx_rows(item)
                blocks.append(table_markdown(rows, header=True))
                read += len(rows)
            if read >= next_check:
                check()
                next_check = read + CHECK_EVERY
    except TooLarge:
        raise
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise Unreadable(f"is not a readable Word file (.docx) ({short_reason(error)})") from None
    except Exception as error:  # lxml.etree.XMLSyntaxError and kin from a damaged part
        if type(error).__module__.startswith(("lxml", "docx")):
            raise Unreadable(
                f"is not a readable Word file (.docx) ({short_reason(error)})"
            ) from None
        raise
    return "\n\n".join(block for block in blocks if block.strip()) + "\n"


def _check_package(data: bytes) -> None:
    """Refuse a zip that is not one, or that unpacks to more than we read (its central
    directory's sizes are what zipfile will read: it stops there and checks the CRC)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise Unreadable("is not a Word file (.docx): it is not a zip package") from None
    unpacked = sum(info.file_size for info in members)
    xml = sum(info.file_size for info in members if info.filename.endswith((".xml", ".rels")))
    check_package_size(unpacked, xml)


class _StyleKinds:
    """What a paragraph style makes of a paragraph (a heading level, a list item), worked
    out once per style: python-docx's ``paragraph.style`` scans every style of the
    document on each call, about 3 ms, which made a 10,000-paragraph file take a minute."""

    def __init__(self) -> None:
        self._known: dict[str | None, tuple[int, bool]] = {}

    def of(self, paragraph) -> tuple[int, bool]:  # type: ignore[no-untyped-def]
        """(heading level or 0, whether it is a list item) of ``paragraph``'s style."""
        style_id = paragraph._p.style  # the w:pStyle value; None: the default style
        if style_id not in self._known:
            style = paragraph.style
            name = (style.name or "") if style is not None else ""
            self._known[style_id] = (
                heading_level(_style_names(style)),
                name.lower().startswith("list"),
            )
        return self._known[style_id]


def _docx_paragraph(paragraph, kinds: _StyleKinds) -> str:  # type: ignore[no-untyped-def]
    level, listed = kinds.of(paragraph)
    return paragraph_line(paragraph.text, level, listed)


def _style_names(style) -> list[str]:  # type: ignore[no-untyped-def]
    """The names of a style and of up to three styles it is based on, nearest first."""
    names = []
    for _ in range(4):
        if style is None:
            break
        names.append(style.name or "")
        style = style.base_style
    return names


def _docx_rows(table) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The table's rows as text cells; a merged cell counts once in its row."""
    rows = []
    for row in table.rows:
        cells = list(row.cells)
        texts = [
            cell.text
            for i, cell in enumerate(cells)
            if i == 0 or cell._tc is not cells[i - 1]._tc  # a merged cell repeats
        ]
        rows.append(texts)
    return rows
