"""Reading an uploaded file into text: the rules over bytes and text already in memory.

What comes out is markdown-shaped text: headings as ``#`` lines (so chunks of HTML and
Word files get a heading path), paragraphs separated by blank lines, and tables as
markdown tables (``ragcore.knowledge.chunking.table_markdown``: the chunker keeps rows
whole and names each row's cells by the header row). A PDF's pages become ``# Page N``
sections, so a citation can say which page it came from. In text taken from a PDF, a
Word file, HTML or a CSV, a line that merely begins with ``# `` or ``|`` is escaped so
it does not become a heading or a table.

Here: decoding text, HTML and CSV read with the standard library's parsers, how PDF pages
and Word paragraphs become text, what OCR decides (which PDF pages need it, in which
languages, the text of a page read so), and the bounds on the work one file may cause.
``ragio.knowledge.formats`` calls the PDF, Word and image libraries and Tesseract
(``ragio.knowledge.ocr``) and runs the reading in a worker thread, with a ``check`` that
the pieces of work here call between them (it stops a reading whose request was
cancelled or that took too long).
"""

from __future__ import annotations

import codecs
import csv
import re
from collections.abc import Callable, Iterable, Sequence
from html.parser import HTMLParser

import attrs

from ragcore.errors import InvalidInput, TooLarge
from ragcore.knowledge.chunking import table_lines, table_markdown
from ragcore.settings import Settings

# A .docx is a zip whose parts python-docx reads whole into memory and whose XML it
# parses into a tree: refuse packages that unpack to more than these (a zip bomb).
MAX_UNPACKED_BYTES = 256 * 2**20
MAX_DOCX_XML_BYTES = 32 * 2**20  # a 1,000-page manual's XML is about 10 MB
MAX_BLOCKS = 50_000  # paragraphs and table rows of a Word file
MAX_PDF_PAGES = 5_000
#: pages (of a PDF without a text layer, or of a TIFF) read by OCR in one file: at about
#: 1-3 s a page on one core, more would not end within MAX_DOCUMENT_READ_SECONDS anyway
MAX_OCR_PAGES = 200
#: pixels of one image read by OCR: an A4 page scanned at 600 dpi is 35 million. The
#: image is decoded whole (about a byte a pixel, four in colour), so a small file that
#: unpacks to a huge image (a decompression bomb) is refused before it is decoded.
MAX_OCR_PIXELS = 40_000_000
#: a PDF page whose text layer has fewer letters and digits than this, and an image, is
#: a scan (a scanner's stamp, a page number, may be all its text layer holds); an image
#: OCR read fewer from is read again, its noise smoothed (``legible``)
MIN_TEXT_CHARS = 20
HTML_PIECE = 256 * 1024  # characters fed to the HTML parser between checks
CHECK_EVERY = 500  # paragraphs or rows read between checks
_LOOKS_LIKE_MARKUP = re.compile(r"^(#{1,6}\s|\s*\|)")  # a heading or a table's row
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)
#: a line and its end (``\n``, ``\r\n`` or ``\r``, as the csv module wants them), or the last
_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+", re.S)

#: called between pieces of work: raises to stop the reading
Check = Callable[[], None]


def unchecked() -> None:
    return None


class Unreadable(InvalidInput):
    """The file is not what it says or holds no text; the message says why (HTTP 422)."""

    def __init__(self, message: str):
        super().__init__("file", message)


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
    for charset in (_known_charset(declared), "utf-8", "cp1252"):
        if charset:
            try:
                return data.decode(charset)
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


def literal(line: str) -> str:
    """A line of text from a non-markdown file, escaped if it would read as a heading or
    a table's row."""
    return "\\" + line.lstrip() if _LOOKS_LIKE_MARKUP.match(line) else line


def short_reason(error: BaseException) -> str:
    """A library's error, on one line and short, for the reason a file is unreadable."""
    message = " ".join(str(error).split()) or type(error).__name__
    return message[:200]


# --- PDF --------------------------------------------------------------------------------------


def check_page_count(pages: int) -> None:
    if pages > MAX_PDF_PAGES:
        raise TooLarge("file", f"has {pages} pages; the limit is {MAX_PDF_PAGES}: split it")


#: PDF pages of one file whose ruled tables are looked for (``PageWithTables``): at about
#: 60 ms a page (pdfplumber), a long report of ruled pages stays within its read time
MAX_TABLE_PAGES = 100
#: a page whose drawing holds fewer rectangles and line segments than this has no ruled
#: table (a table's grid is at least a box and the line under its header)
MIN_TABLE_RULES = 4


@attrs.frozen
class PageWithTables:
    """A PDF page whose ruled tables were found: the text around them and each table's
    rows, in reading order. A table becomes a markdown table (``table_markdown``, its
    first row the header), which the chunker cuts between rows with the column names on
    each; the text around it is read as any page's (``page_body``)."""

    parts: tuple[str | tuple[tuple[str, ...], ...], ...]

    def body(self) -> str:
        read = (
            page_body(part) if isinstance(part, str) else table_markdown(part, header=True)
            for part in self.parts
        )
        return "\n\n".join(text for text in read if text)


PdfPage = str | PageWithTables


def pdf_text(pages: Iterable[PdfPage]) -> str:
    """The text of a PDF's pages (their text layer, or what OCR read of a scanned one, in
    order) as ``# Page N`` sections; Unreadable when no page holds any text."""
    text = paged_text(pages)
    if not text:
        raise Unreadable(
            "has no text: no text layer, and no image on its pages that OCR could read; "
            "export it with text or send the text itself"
        )
    return text


def paged_text(pages: Iterable[PdfPage]) -> str:
    """Pages' text as ``# Page N`` sections, those without words left out; "" for none."""
    sections = []
    for number, page in enumerate(pages, start=1):
        if body := page_body(page) if isinstance(page, str) else page.body():
            sections.append(f"# Page {number}\n\n{body}")
    return "\n\n".join(sections) + "\n" if sections else ""


def page_body(page: str) -> str:
    """A page's text as read (a text layer or OCR): words broken at a line end joined,
    lines that would read as markup escaped; "" when it holds no word."""
    text = _join_hyphenated(page.replace("\x00", "").replace("\f", "\n"))
    lines = [literal(line.strip()) for line in text.split("\n")]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return body if any(ch.isalnum() for ch in body) else ""


def is_scanned(text_layer: str, images: int) -> bool:
    """Whether a PDF page is read by OCR: it has an image and next to no text layer."""
    return images > 0 and not legible(text_layer)


def legible(text: str) -> bool:
    """Whether a text (a text layer, what OCR read) holds more than a stamp's worth."""
    return letter_count(text) >= MIN_TEXT_CHARS


def letter_count(text: str) -> int:
    return sum(1 for ch in text if ch.isalnum())


def _join_hyphenated(text: str) -> str:
    """Words broken across lines with a hyphen ("exam-\\nple") joined again."""
    return re.sub(r"(\w)-\n(?=[a-zà-ÿ])", r"\1", text)


# --- OCR --------------------------------------------------------------------------------------

#: Tesseract's name of each language ``LANGUAGE_DETECTION_SUPPORTED_LANGUAGES`` may name
#: that it reads (Debian's package of one is ``tesseract-ocr-`` and it, ``_`` as ``-``)
TESSERACT_LANGUAGES = {
    "af": "afr", "ar": "ara", "az": "aze", "be": "bel", "bg": "bul", "bn": "ben",
    "bs": "bos", "ca": "cat", "cs": "ces", "cy": "cym", "da": "dan", "de": "deu",
    "el": "ell", "en": "eng", "eo": "epo", "es": "spa", "et": "est", "eu": "eus",
    "fa": "fas", "fi": "fin", "fr": "fra", "ga": "gle", "gu": "guj", "he": "heb",
    "hi": "hin", "hr": "hrv", "hu": "hun", "hy": "hye", "id": "ind", "is": "isl",
    "it": "ita", "ja": "jpn", "ka": "kat", "kk": "kaz", "ko": "kor", "la": "lat",
    "lt": "lit", "lv": "lav", "mi": "mri", "mk": "mkd", "mn": "mon", "mr": "mar",
    "ms": "msa", "nb": "nor", "nl": "nld", "nn": "nor", "pa": "pan", "pl": "pol",
    "pt": "por", "ro": "ron", "ru": "rus", "sk": "slk", "sl": "slv", "sq": "sqi",
    "sr": "srp", "sv": "swe", "sw": "swa", "ta": "tam", "te": "tel", "th": "tha",
    "tl": "fil", "tr": "tur", "uk": "ukr", "ur": "urd", "vi": "vie", "yo": "yor",
    "zh": "chi_sim",
}  # fmt: skip
#: what to install when Tesseract is missing (HTTP 422 says it, never an empty document)
INSTALL_OCR = "apt-get install tesseract-ocr (Debian, Ubuntu; the Docker image has it)"


def ocr_languages(wanted: Iterable[str], installed: Iterable[str] | None) -> str:
    """Tesseract's ``-l`` for the documents' languages ``wanted`` (ISO 639-1 codes): those
    of them it has installed (``installed``: its own names; None: it is not installed),
    joined with ``+``; English when it reads none of them. Unreadable when Tesseract is
    not installed, or has none of them and no English either, naming what to install."""
    if installed is None:
        raise Unreadable(f"is an image or a scan: reading it needs OCR; install it: {INSTALL_OCR}")
    have = set(installed)
    codes = [TESSERACT_LANGUAGES[code] for code in wanted if code in TESSERACT_LANGUAGES]
    chosen = [code for code in dict.fromkeys(codes) if code in have]
    if chosen:
        return "+".join(chosen)
    if "eng" in have:
        return "eng"
    packages = " ".join(f"tesseract-ocr-{code.replace('_', '-')}" for code in codes or ["eng"])
    raise Unreadable(
        f"is an image or a scan, and OCR has none of its languages: install {packages}"
    )


def document_languages(settings: Settings) -> tuple[str, ...]:
    """The languages the owner's documents are in, for OCR: those answers may be given in
    (LANGUAGE_DETECTION_SUPPORTED_LANGUAGES), else DEFAULT_LANGUAGE."""
    return settings.language_detection_supported_languages or (settings.default_language,)


def check_ocr_pages(pages: int) -> None:
    if pages > MAX_OCR_PAGES:
        raise TooLarge(
            "file",
            f"has {pages} scanned pages; OCR reads at most {MAX_OCR_PAGES} in one file: "
            "split it, or export it with a text layer",
        )


def check_image_size(width: int, height: int) -> None:
    """Refuse an image too large to read by OCR before it is decoded (a decompression bomb
    is a small file of a huge image)."""
    if width * height > MAX_OCR_PIXELS:
        raise image_too_large(f"{width} x {height} ({width * height / 1e6:.0f} million)")


def image_too_large(pixels: str) -> TooLarge:
    """TooLarge for an image of ``pixels`` pixels, too many to read by OCR (HTTP 413)."""
    return TooLarge(
        "file",
        f"holds an image of {pixels} pixels; OCR reads at most "
        f"{MAX_OCR_PIXELS // 1_000_000} million: scan it at 300 dpi",
    )


def image_text(frames: Sequence[str]) -> str:
    """What OCR read of an image file: its text, or a multi-page TIFF's as ``# Page N``
    sections; Unreadable when it found no words."""
    text = paged_text(frames) if len(frames) > 1 else page_body(frames[0]) if frames else ""
    if not text:
        raise Unreadable("holds no text that OCR could read; send a sharper scan or the text")
    return text.rstrip("\n") + "\n"


# --- Word -------------------------------------------------------------------------------------


def check_package_size(unpacked: int, xml: int) -> None:
    """Refuse a Word package that unpacks to more than is read (a zip bomb)."""
    if unpacked > MAX_UNPACKED_BYTES or xml > MAX_DOCX_XML_BYTES:
        raise TooLarge(
            "file",
            f"unpacks to {unpacked // 2**20} MB, {xml // 2**20} MB of it XML; the limits are "
            f"{MAX_UNPACKED_BYTES // 2**20} MB and {MAX_DOCX_XML_BYTES // 2**20} MB of XML",
        )


def check_block_count(blocks: int) -> None:
    if blocks > MAX_BLOCKS:
        raise TooLarge(
            "file",
            f"has {blocks} paragraphs and table rows; the limit is {MAX_BLOCKS}: "
            "split it into smaller files",
        )


def heading_level(style_names: Iterable[str]) -> int:
    """The heading level a paragraph style makes, given the style's name and those of the
    styles it is based on, nearest first: Title is level 1 and Heading N level N+1 (at
    most 6); custom styles based on them too; 0 for any other."""
    for name in style_names:
        name = name.strip()
        if name.lower() == "title":
            return 1
        if match := _HEADING_STYLE.match(name):
            return min(int(match.group(1)) + 1, 6)
    return 0


def paragraph_line(text: str, level: int, listed: bool) -> str:
    """A Word paragraph as a line: a heading of ``level``, a list item, or plain text."""
    text = " ".join(text.split())
    if not text:
        return ""
    if level:
        return "#" * level + " " + text
    if listed:
        return "- " + text
    return literal(text)


# --- HTML -------------------------------------------------------------------------------------


def html_text(text: str, check: Check = unchecked) -> str:
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


@attrs.define
class _OpenTable:
    """A table being read: its rows so far, and the row and cell being read (None: none)."""

    rows: list[list[str]] = attrs.field(factory=list)
    row: list[str] | None = None
    cell: list[str] | None = None
    header: bool = True  # a header row is all <th>


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
        self.tables: list[_OpenTable] = []  # the open tables, innermost last

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
            self.tables.append(_OpenTable())
        elif tag == "tr" and self.tables:
            self.end_row()
            self.tables[-1].row = []
        elif tag in ("td", "th") and self.tables:
            self.end_cell()
            table = self.tables[-1]
            if table.row is None:
                table.row = []
            if tag == "td" and not table.rows:
                table.header = False  # a header row is all <th>
            table.cell = []
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
            if self.tables and self.tables[-1].cell is not None:  # a table in a cell
                lines = table_lines(table.rows, header=table.header)
                self.tables[-1].cell.append("; ".join(lines))
            elif block := table_markdown(table.rows, header=table.header):
                self.blocks.append(block)
        elif tag == "tr" and self.tables:
            self.end_row()
        elif tag in ("td", "th") and self.tables:
            self.end_cell()
        elif tag in self.BLOCKS or tag == "li":
            self.end_block()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.tables and self.tables[-1].cell is not None:
            self.tables[-1].cell.append(data)
        elif not self.tables or self.tables[-1].row is None:
            self.words.append(data)

    # building the text

    def end_block(self) -> None:
        text = " ".join("".join(self.words).split())
        self.words.clear()
        if text:
            if self.heading:
                self.blocks.append("#" * self.heading + " " + text)
            else:
                self.blocks.append(self.prefix + literal(text) if self.prefix else literal(text))
        self.heading = 0
        self.prefix = ""

    def end_cell(self) -> None:
        table = self.tables[-1]
        if table.cell is not None:
            if table.row is None:
                table.row = []
            table.row.append(" ".join("".join(table.cell).split()))
            table.cell = None

    def end_row(self) -> None:
        self.end_cell()
        table = self.tables[-1]
        if table.row is not None:
            table.rows.append(table.row)
            table.row = None

    def result(self) -> str:
        while self.tables:
            self.handle_endtag("table")
        self.end_block()
        return "\n\n".join(self.blocks) + "\n"


# --- CSV --------------------------------------------------------------------------------------


def csv_rows(text: str, check: Check = unchecked) -> list[list[str]]:
    """The rows of a CSV text, its delimiter sniffed (comma, semicolon, tab or bar; comma
    when unsure), blank rows left out; Unreadable when it is not CSV."""
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = []
        for row in csv.reader(_LINE.findall(text), dialect):
            rows.append(row)
            if len(rows) % CHECK_EVERY == 0:
                check()
    except csv.Error as error:
        raise Unreadable(f"is not a readable CSV file ({short_reason(error)})") from None
    return [row for row in rows if any(cell.strip() for cell in row)]


def csv_text(text: str, check: Check = unchecked) -> str:
    rows = csv_rows(text, check)
    if len(rows) < 2:
        raise Unreadable("has no rows under its header row")
    return table_markdown(rows, header=True) + "\n"
