"""Which format an upload is, and how tables become text: pure rules."""

import pytest

from ragcore.knowledge.documents import (
    DOCX,
    detect_format,
    format_for_suffix,
    supported_formats,
    table_lines,
    text_content_type,
    upload_name,
)


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
        ("logo.png", "image/png"),
        ("logo.png", "application/octet-stream"),
        ("old.doc", "application/msword"),
        ("sheet.xlsx", None),
        ("", None),
    ],
)
def test_other_files_are_not_ours(filename, content_type):
    assert detect_format(filename, content_type, b"\x89PNG\r\n\x1a\n") is None


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


def test_a_table_with_a_header_reads_as_named_values_one_row_a_line():
    rows = [["Name", "Role", ""], ["Ada", "engineer", "x"], ["", "", ""], ["Grace", "", "y"]]
    assert table_lines(rows, header=True) == [
        "Name: Ada; Role: engineer; column 3: x",
        "Name: Grace; column 3: y",
    ]


def test_a_table_without_a_header_joins_its_cells():
    assert table_lines([["a", " b\n c "], ["d", ""]], header=False) == ["a | b c", "d"]
    assert table_lines([["only", "row"]], header=True) == ["only | row"]
