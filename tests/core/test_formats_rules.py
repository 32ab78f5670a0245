"""Which format an upload is, and how its bytes become text: pure rules."""

import codecs

import pytest

from ragcore.errors import TooLarge
from ragcore.knowledge.chunking import table_lines, table_markdown
from ragcore.knowledge.documents import (
    DOCX,
    detect_format,
    format_for_suffix,
    supported_formats,
    text_content_type,
    upload_name,
)
from ragcore.knowledge.formats import (
    MAX_BLOCKS,
    MAX_DOCX_XML_BYTES,
    MAX_OCR_PAGES,
    MAX_PDF_PAGES,
    TESSERACT_LANGUAGES,
    Unreadable,
    check_block_count,
    check_image_size,
    check_ocr_pages,
    check_package_size,
    check_page_count,
    csv_text,
    decode_text,
    document_languages,
    heading_level,
    html_charset,
    html_text,
    image_text,
    is_scanned,
    ocr_languages,
    paragraph_line,
    pdf_text,
)
from ragcore.language import NAMES as DETECTABLE_LANGUAGES
from ragcore.settings import load_settings


@pytest.mark.parametrize(
    ("filename", "content_type", "expected"),
    [
        ("notes.txt", "text/plain", "text"),
        ("README.MD", "application/octet-stream", "markdown"),  # the suffix decides first
        ("page.htm", None, "html"),
        ("report.pdf", "application/octet-stream", "pdf"),
        ("letter.docx", "application/zip", "docx"),
        ("prices.csv", "application/vnd.ms-excel", "csv"),
        ("export", "text/csv; charset=utf-8", "csv"),  # no suffix: the media type
        ("server.log", "text/plain", "text"),
        ("blob", DOCX, "docx"),
    ],
)
def test_the_suffix_then_the_media_type_name_the_format(filename, content_type, expected):
    assert detect_format(filename, content_type).name == expected


def test_a_file_with_neither_is_looked_at():
    assert detect_format("scan", "application/octet-stream", b"%PDF-1.7\n...").name == "pdf"
    assert detect_format("README", None, "Grüße aus Köln".encode()[:-1]).name == "text"
    assert detect_format("data", None, b"\x00\x01binary") is None


@pytest.mark.parametrize(
    ("filename", "content_type"),
    [
        ("clip.mp4", "video/mp4"),
        ("clip.mp4", "application/octet-stream"),
        ("old.doc", "application/msword"),
        ("sheet.xlsx", None),
        ("", None),
    ],
)
def test_other_files_are_not_ours(filename, content_type):
    assert detect_format(filename, content_type, b"\x00\x00\x00\x18ftypmp42") is None


@pytest.mark.parametrize(
    ("head", "name"),
    [
        (b"\x89PNG\r\n\x1a\n\x00", "png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "jpeg"),
        (b"II*\x00\x08\x00", "tiff"),
        (b"MM\x00*\x00\x00", "tiff"),
    ],
)
def test_images_are_ours_by_suffix_type_or_signature(head, name):
    assert detect_format(None, None, head).name == name
    assert detect_format("scan", "application/octet-stream", head).name == name
    suffix = {"png": ".png", "jpeg": ".JPG", "tiff": ".tif"}[name]
    assert detect_format("scan" + suffix, "application/octet-stream").name == name
    assert detect_format(None, f"image/{name}").name == name


def test_the_supported_formats_are_named_for_messages():
    message = supported_formats()
    for name in ("txt", "md", "html", "pdf", "docx", "csv", "application/pdf"):
        assert name in message


def test_an_uploaded_path_keeps_only_its_base_name():
    assert upload_name("C:\\Users\\ada\\report.pdf") == "report.pdf"
    assert upload_name("../../etc/notes.txt") == "notes.txt"
    assert format_for_suffix("archive.tar.pdf").name == "pdf"
    assert format_for_suffix(".md") is None  # a hidden file named ".md", no suffix


def test_text_sent_as_json_is_markdown_when_its_name_says_so():
    assert text_content_type("faq.md") == "text/markdown"
    assert text_content_type("faq") == "text/plain"


def test_a_table_is_a_markdown_table_its_header_row_over_a_delimiter_line():
    rows = [["Name", "Role"], ["Ada", "engineer | lead"], ["", ""], ["Grace", ""]]
    assert table_markdown(rows, header=True) == (
        "| Name | Role |\n| --- | --- |\n| Ada | engineer \\| lead |\n| Grace |  |"
    )
    assert table_markdown(rows, header=False) == (
        "| Name | Role |\n| Ada | engineer \\| lead |\n| Grace |  |"
    )
    assert table_markdown([["only", "row"]], header=True) == "| only | row |"
    assert table_markdown([["", " "]], header=True) == ""


def test_a_table_in_a_cell_reads_as_named_values_one_row_a_line():
    rows = [["Name", "Role", ""], ["Ada", "engineer", "x"], ["", "", ""], ["Grace", "", "y"]]
    assert table_lines(rows, header=True) == [
        "Name: Ada; Role: engineer; column 3: x",
        "Name: Grace; column 3: y",
    ]


def test_a_table_without_a_header_joins_its_cells():
    assert table_lines([["a", " b\n c "], ["d", ""]], header=False) == ["a | b c", "d"]
    assert table_lines([["only", "row"]], header=True) == ["only | row"]


def test_text_is_read_as_utf8_then_windows_1252_and_a_bom_or_a_declared_charset_wins():
    assert decode_text("Grüße".encode()) == "Grüße"
    assert decode_text("Café".encode("cp1252")) == "Café"  # a legacy export
    assert decode_text(codecs.BOM_UTF16_LE + "Köln".encode("utf-16-le")) == "Köln"
    assert decode_text("Привет".encode("koi8-r"), "koi8-r") == "Привет"
    with pytest.raises(Unreadable, match="binary, not text"):
        decode_text(b"PK\x00\x03")


def test_html_becomes_headings_paragraphs_list_items_and_table_rows():
    html = (
        "<html><head><title>x</title><script>var a = 1;</script></head><body>"
        "<nav>Home | Shop</nav><h2>Refunds</h2><p>Within <b>30</b> days.</p>"
        "<ul><li>Keep the receipt</li></ul><p># not a heading</p><p>| nor a table</p>"
        "<table><tr><th>Item</th><th>Days</th></tr><tr><td>Bike</td><td>14</td></tr>"
        "<tr><td>Tent</td><td><table><tr><th>A</th></tr><tr><td>1</td></tr></table></td></tr>"
        "</table></body></html>"
    )
    assert html_text(html) == (
        "## Refunds\n\nWithin 30 days.\n\n- Keep the receipt\n\n\\# not a heading\n\n"
        "\\| nor a table\n\n| Item | Days |\n| --- | --- |\n| Bike | 14 |\n| Tent | A: 1 |\n"
    )
    assert html_charset(b'<meta charset="windows-1252"><p>x') == "windows-1252"


def test_a_csv_is_read_with_its_sniffed_delimiter_as_a_table_under_its_header():
    semicolons = "Name;City;Days\nAda;London;14\nGrace;Paris;30\n\nAlan;Wilmslow;7\n"
    assert csv_text(semicolons) == (
        "| Name | City | Days |\n| --- | --- | --- |\n| Ada | London | 14 |\n"
        "| Grace | Paris | 30 |\n| Alan | Wilmslow | 7 |\n"
    )
    quoted = 'name,note\r\nAda,"two\r\nlines"\r\nGrace,x\r\n'  # a line end in a cell
    assert csv_text(quoted) == (
        "| name | note |\n| --- | --- |\n| Ada | two lines |\n| Grace | x |\n"
    )
    with pytest.raises(Unreadable, match="no rows under its header"):
        csv_text("name,city\n")


def test_pdf_pages_become_page_sections_with_broken_words_joined():
    assert pdf_text(["Refunds take exam-\nple days.", "  \n", "# Total\x00"]) == (
        "# Page 1\n\nRefunds take example days.\n\n# Page 3\n\n\\# Total\n"
    )
    with pytest.raises(Unreadable, match="no text layer, and no image"):
        pdf_text(["", " \n "])


def test_a_pdf_page_with_an_image_and_next_to_no_text_is_a_scan():
    assert is_scanned("", images=1)
    assert is_scanned("Scanned by CamScanner", images=1)  # 19 letters: a stamp
    assert not is_scanned("Refunds are paid within five business days.", images=1)
    assert not is_scanned("", images=0)  # nothing to read: the page is blank


def test_ocr_reads_the_documents_languages_those_installed_else_english():
    installed = ["eng", "deu", "osd", "chi_sim"]
    assert ocr_languages(["de", "en"], installed) == "deu+eng"
    assert ocr_languages(["de", "fr", "zh"], installed) == "deu+chi_sim"  # no French here
    assert ocr_languages(["fr"], installed) == "eng"
    assert ocr_languages(["so"], installed) == "eng"  # Somali: Tesseract has no model
    with pytest.raises(Unreadable, match="apt-get install tesseract-ocr "):
        ocr_languages(["en"], None)
    with pytest.raises(Unreadable, match="install tesseract-ocr-fra tesseract-ocr-chi-sim"):
        ocr_languages(["fr", "zh"], ["osd"])
    assert set(TESSERACT_LANGUAGES) <= set(DETECTABLE_LANGUAGES)


def test_ocr_follows_the_answer_languages_else_the_default_language():
    assert document_languages(load_settings({})) == ("en",)
    assert document_languages(load_settings({"DEFAULT_LANGUAGE": "de"})) == ("de",)
    settings = load_settings({"LANGUAGE_DETECTION_SUPPORTED_LANGUAGES": "fr,nl"})
    assert document_languages(settings) == ("fr", "nl")


def test_ocr_bounds_pages_and_pixels_before_any_is_decoded():
    check_ocr_pages(MAX_OCR_PAGES)
    with pytest.raises(TooLarge, match=f"{MAX_OCR_PAGES + 1} scanned pages"):
        check_ocr_pages(MAX_OCR_PAGES + 1)
    check_image_size(4960, 7016)  # A4 at 600 dpi
    with pytest.raises(TooLarge, match="30000 x 30000 .900 million. pixels"):
        check_image_size(30_000, 30_000)


def test_what_ocr_read_is_text_pages_for_a_multi_page_image():
    assert image_text(["Opening hours\n\n\n\nMon-Fri 9-5\n\f"]) == "Opening hours\n\nMon-Fri 9-5\n"
    assert image_text(["# Sale", "  ", "| 20 % off"]) == (
        "# Page 1\n\n\\# Sale\n\n# Page 3\n\n\\| 20 % off\n"
    )
    with pytest.raises(Unreadable, match="no text that OCR could read"):
        image_text([" \f", "~"])


def test_word_styles_make_headings_and_list_items():
    assert heading_level(["Title"]) == 1
    assert heading_level(["Heading 2"]) == 3
    assert heading_level(["My Fancy Heading", "heading 9"]) == 6  # based on one, at most 6
    assert heading_level(["Normal"]) == 0
    assert paragraph_line("  Returns \n policy ", heading_level(["Heading 1"]), False) == (
        "## Returns policy"
    )
    assert paragraph_line("Keep it", 0, True) == "- Keep it"
    assert paragraph_line("## not a heading", 0, False) == "\\## not a heading"
    assert paragraph_line("   ", 2, False) == ""


def test_the_work_one_file_may_cause_is_bounded():
    check_page_count(MAX_PDF_PAGES)
    with pytest.raises(TooLarge, match=f"5001 pages; the limit is {MAX_PDF_PAGES}"):
        check_page_count(MAX_PDF_PAGES + 1)
    with pytest.raises(TooLarge, match="paragraphs and table rows"):
        check_block_count(MAX_BLOCKS + 1)
    with pytest.raises(TooLarge, match="MB of it XML"):
        check_package_size(1, MAX_DOCX_XML_BYTES + 1)


def test_reading_stops_at_a_check_that_raises():
    def stop():
        raise TooLarge("file", "took too long")

    with pytest.raises(TooLarge):
        html_text("<p>x</p>", stop)
    with pytest.raises(TooLarge):
        csv_text("a,b\n" + "1,2\n" * 600, stop)
