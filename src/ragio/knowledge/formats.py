"""Reading an uploaded file into text, keeping the structure the chunker follows.

What comes out is markdown-shaped text: headings as ``#`` lines (so chunks of
HTML and Word files get a heading path), paragraphs separated by blank lines,
and tables as one line per row (``Name: Ada; Role: engineer``, see
``ragcore.knowledge.documents.table_lines``). A PDF's pages become ``# Page N``
sections, so a citation can say which page it came from. In text taken from a
PDF, a Word file, HTML or a CSV, a line that merely begins with ``# `` is
escaped so it does not become a heading.

Libraries, chosen small and maintained:

- PDF: ``pypdf``, pure Python with no system library, reads the text layer.
  It does no OCR: a scanned PDF with no text layer is refused with that reason.
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

Parsing is CPU-bound: async code calls ``read_upload``, which runs
``extract_text`` in a worker thread so the Trio loop stays free.

The work one file may cause is bounded, so a small file cannot keep a core busy for
minutes (a 66 KB Word file whose XML unpacks to 10 MB of 150,000 paragraphs took
9.5 minutes before): a Word file's XML may unpack to at most MAX_DOCX_XML_BYTES and
hold at most MAX_BLOCKS paragraphs and table rows, a PDF at most MAX_PDF_PAGES pages,
and reading any file at most MAX_DOCUMENT_READ_SECONDS (checked between paragraphs,
pages, rows and pieces of HTML); each is a ``TooLarge`` (HTTP 413) that says which.
The same checks stop the reading as soon as the request that waits for it is
cancelled (its client went away), instead of finishing work nobody will read.
"""

from __future__ import annotations

import codecs
import csv
import functools
import io
import re
import time
import zipfile
import zlib
from collections.abc import Callable
from html.parser import HTMLParser

import trio

from ragcore.errors import InvalidInput, TooLarge
from ragcore.knowledge.documents import Format, table_lines

# A .docx is a zip whose parts python-docx reads whole into memory and whose XML it
# parses into a tree: refuse packages that unpack to more than these (a zip bomb).
MAX_UNPACKED_BYTES = 256 * 2**20
MAX_DOCX_XML_BYTES = 32 * 2**20  # a 1,000-page manual's XML is about 10 MB
MAX_BLOCKS = 50_000  # paragraphs and table rows of a Word file
MAX_PDF_PAGES = 5_000
HTML_PIECE = 256 * 1024  # characters fed to the HTML parser between checks
CHECK_EVERY = 500  # paragraphs or rows read between checks
_LOOKS_LIKE_HEADING = re.compile(r"^#{1,6}\s")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)


class Unreadable(InvalidInput):
    """The file is not what it says or holds no text; the message says why (HTTP 422)."""

    def __init__(self, message: str):
        super().__init__("file", message)


Check = Callable[[], None]


def _unchecked() -> None:
    return None


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
    data: bytes, fmt: Format, charset: str | None = None, *, seconds: float
) -> str:
    """``extract_text`` in a worker thread, for at most ``seconds``; cancelling the
    calling task stops the reading at its next check."""
    read = functools.partial(extract_text, data, fmt, charset, check=reading_check(seconds))
    return await trio.to_thread.run_sync(read)


def extract_text(
    data: bytes, fmt: Format, charset: str | None = None, *, check: Check = _unchecked
) -> str:
    """The text of ``data`` read as ``fmt``; Unreadable when it cannot be read as that,
    TooLarge past a bound (see the module's docstring).

    ``charset`` is the one the client declared, if any (text formats only). ``check`` is
    called between pieces of work (``reading_check``).
    """
    if not data:
        raise Unreadable("is empty")
    if fmt.name == "pdf":
        return _pdf(data, check)
    if fmt.name == "docx":
        return _docx(data, check)
    if fmt.name == "html":
        return _html(decode_text(data, charset or html_charset(data)), check)
    text = decode_text(data, charset)
    if fmt.name == "csv":
        return _csv(text, check)
    return text.replace("\r\n", "\n")


def decode_text(data: bytes, declared: str | None = None) -> str:
    """``data`` as text: BOM, then the declared charset, then UTF-8, then Windows-1252."""
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                raise Unreadable(f"is not valid {encoding.upper()} text") from None
    if b"\x00" in data:
        raise Unreadable("is binary, not text")
    for encoding in (_known_charset(declared), "utf-8", "cp1252"):
        if encoding:
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                continue
    raise Unreadable("is not UTF-8 text; save it as UTF-8 and send it again")


def _known_charset(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def _literal(line: str) -> str:
    """A line of text from a non-markdown file, escaped if it would read as a heading."""
    return "\\" + line if _LOOKS_LIKE_HEADING.match(line) else line


# --- PDF --------------------------------------------------------------------------------------


def _pdf(data: bytes, check: Check) -> str:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    if b"%PDF-" not in data[:1024]:
        raise Unreadable("is not a PDF: it does not start with %PDF-")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("is password-protected; remove the password and send it again")
        if len(reader.pages) > MAX_PDF_PAGES:
            raise TooLarge(
                "file", f"has {len(reader.pages)} pages; the limit is {MAX_PDF_PAGES}: split it"
            )
        pages = []
        for page in reader.pages:
            check()
            pages.append(page.extract_text() or "")
    except (Unreadable, TooLarge):
        raise
    except FileNotDecryptedError:
        raise Unreadable("is password-protected; remove the password and send it again") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise Unreadable(f"is not a readable PDF ({_short(error)})") from None
    except (AssertionError, RecursionError, OverflowError, zlib.error) as error:
        raise Unreadable(f"is not a readable PDF ({_short(error)})") from None
    sections = []
    for number, page in enumerate(pages, start=1):
        text = _join_hyphenated(page.replace("\x00", ""))
        lines = [_literal(line.strip()) for line in text.split("\n")]
        body = "\n".join(lines).strip()
        if any(ch.isalnum() for ch in body):
            sections.append(f"# Page {number}\n\n{body}")
    if not sections:
        raise Unreadable(
            "has no text layer (a scanned PDF needs OCR, which ragchat does not do); "
            "export it with text or send the text itself"
        )
    return "\n\n".join(sections) + "\n"


def _join_hyphenated(text: str) -> str:
    """Words broken across lines with a hyphen ("exam-\\nple") joined again."""
    return re.sub(r"(\w)-\n(?=[a-zà-ÿ])", r"\1", text)


def _short(error: BaseException) -> str:
    message = " ".join(str(error).split()) or type(error).__name__
    return message[:200]


# --- Word -------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)


def _docx(data: bytes, check: Check) -> str:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.text.paragraph import Paragraph

    _check_package(data)
    try:
        document = docx.Document(io.BytesIO(data))
        # counted in the parsed tree first (lxml, fast): a bomb is refused before any is read
        blocks_in_body = int(document.element.body.xpath("count(.//w:p | .//w:tr)"))
        if blocks_in_body > MAX_BLOCKS:
            raise TooLarge(
                "file",
                f"has {blocks_in_body} paragraphs and table rows; the limit is {MAX_BLOCKS}: "
                "split it into smaller files",
            )
        kinds = _StyleKinds()
        blocks: list[str] = []
        read, next_check = 0, CHECK_EVERY  # paragraphs and table rows
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                blocks.append(_docx_paragraph(item, kinds))
                read += 1
            else:
                rows = _docx_rows(item)
                blocks.extend(table_lines(rows, header=True))
                read += len(rows)
            if read >= next_check:
                check()
                next_check = read + CHECK_EVERY
    except TooLarge:
        raise
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise Unreadable(f"is not a readable Word file (.docx) ({_short(error)})") from None
    except Exception as error:  # lxml.etree.XMLSyntaxError and kin from a damaged part
        if type(error).__module__.startswith(("lxml", "docx")):
            raise Unreadable(f"is not a readable Word file (.docx) ({_short(error)})") from None
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
    if unpacked > MAX_UNPACKED_BYTES or xml > MAX_DOCX_XML_BYTES:
        raise TooLarge(
            "file",
            f"unpacks to {unpacked // 2**20} MB, {xml // 2**20} MB of it XML; the limits are "
            f"{MAX_UNPACKED_BYTES // 2**20} MB and {MAX_DOCX_XML_BYTES // 2**20} MB of XML",
        )


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
            self._known[style_id] = (_docx_heading_level(style), name.lower().startswith("list"))
        return self._known[style_id]


def _docx_paragraph(paragraph, kinds: _StyleKinds) -> str:  # type: ignore[no-untyped-def]
    text = " ".join(paragraph.text.split())
    if not text:
        return ""
    level, listed = kinds.of(paragraph)
    if level:
        return "#" * level + " " + text
    if listed:
        return "- " + text
    return _literal(text)


def _docx_heading_level(style) -> int:  # type: ignore[no-untyped-def]
    """Title is level 1 and Heading N level N+1 (at most 6); custom styles based on them too."""
    for _ in range(4):  # a style and up to three styles it is based on
        if style is None:
            return 0
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 1
        if match := _HEADING_STYLE.match(name):
            return min(int(match.group(1)) + 1, 6)
        style = style.base_style
    return 0


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


# --- HTML -------------------------------------------------------------------------------------


def _html(text: str, check: Check) -> str:
    parser = _HtmlText()
    for start in range(0, len(text), HTML_PIECE):
        check()
        parser.feed(text[start : start + HTML_PIECE])
    parser.close()
    return parser.result()


def html_charset(data: bytes) -> str | None:
    """The charset an HTML file declares in a <meta> tag near its start."""
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii") if match else None


class _HtmlText(HTMLParser):
    """One pass over the tags: headings, blocks, list items and tables become lines."""

    SKIP = frozenset(
        {"script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object"}
        | {"nav"}  # site menus: the same links on every page, noise in every chunk
    )
    VOID = frozenset(
        {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
        | {"param", "track", "wbr"}
    )
    BLOCKS = frozenset(
        {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "ul"}
        | {"ol", "dl", "dt", "dd", "blockquote", "pre", "hr", "figure", "figcaption", "form"}
        | {"address", "details", "summary", "body", "html", "fieldset", "caption"}
    )
    HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.words: list[str] = []
        self.prefix = ""
        self.heading = 0
        self.skip: tuple[str, int] | None = None  # the tag being skipped, and its depth
        self.tables: list[dict] = []  # open tables: rows, the row and cell being read

    # the tag stream

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip:
            if tag == self.skip[0]:
                self.skip = (tag, self.skip[1] + 1)
            return
        hidden = any(name == "hidden" for name, _ in attrs)
        if tag in self.SKIP or (hidden and tag not in self.VOID):
            self.skip = (tag, 1)
            return
        if tag == "br":
            self.words.append("\n")
        elif tag in self.HEADINGS:
            self.end_block()
            self.heading = int(tag[1])
        elif tag == "li":
            self.end_block()
            self.prefix = "- "
        elif tag == "table":
            self.end_block()
            self.tables.append({"rows": [], "row": None, "cell": None, "header": True})
        elif tag == "tr" and self.tables:
            self.end_row()
            self.tables[-1]["row"] = []
        elif tag in ("td", "th") and self.tables:
            self.end_cell()
            table = self.tables[-1]
            if table["row"] is None:
                table["row"] = []
            if tag == "td" and not table["rows"]:
                table["header"] = False  # a header row is all <th>
            table["cell"] = []
        elif tag in self.BLOCKS:
            self.end_block()

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag == self.skip[0]:
                depth = self.skip[1] - 1
                self.skip = (tag, depth) if depth else None
            return
        if tag in self.HEADINGS:
            self.end_block()
        elif tag == "table" and self.tables:
            self.end_row()
            table = self.tables.pop()
            lines = table_lines(table["rows"], header=table["header"])
            if self.tables and self.tables[-1]["cell"] is not None:
                self.tables[-1]["cell"].append("; ".join(lines))  # a table in a cell
            else:
                self.blocks.extend(_literal(line) for line in lines)
        elif tag == "tr" and self.tables:
            self.end_row()
        elif tag in ("td", "th") and self.tables:
            self.end_cell()
        elif tag in self.BLOCKS or tag == "li":
            self.end_block()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.tables and self.tables[-1]["cell"] is not None:
            self.tables[-1]["cell"].append(data)
        elif not self.tables or self.tables[-1]["row"] is None:
            self.words.append(data)

    # building the text

    def end_block(self) -> None:
        text = " ".join("".join(self.words).split())
        self.words.clear()
        if text:
            if self.heading:
                self.blocks.append("#" * self.heading + " " + text)
            else:
                self.blocks.append(self.prefix + _literal(text) if self.prefix else _literal(text))
        self.heading = 0
        self.prefix = ""

    def end_cell(self) -> None:
        table = self.tables[-1]
        if table["cell"] is not None:
            if table["row"] is None:
                table["row"] = []
            table["row"].append(" ".join("".join(table["cell"]).split()))
            table["cell"] = None

    def end_row(self) -> None:
        self.end_cell()
        table = self.tables[-1]
        if table["row"] is not None:
            table["rows"].append(table["row"])
            table["row"] = None

    def result(self) -> str:
        while self.tables:
            self.handle_endtag("table")
        self.end_block()
        return "\n\n".join(self.blocks) + "\n"


# --- CSV --------------------------------------------------------------------------------------


def _csv(text: str, check: Check) -> str:
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = []
        for row in csv.reader(io.StringIO(text, newline=""), dialect):
            rows.append(row)
            if len(rows) % CHECK_EVERY == 0:
                check()
    except csv.Error as error:
        raise Unreadable(f"is not a readable CSV file ({_short(error)})") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        raise Unreadable("has no rows under its header row")
    return "\n\n".join(_literal(line) for line in table_lines(rows, header=True)) + "\n"
