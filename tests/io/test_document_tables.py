"""Tables kept whole: a menu uploaded as HTML, CSV and Word is cut between rows, and the
chunk cited for a row holds the table's column names with it."""

from __future__ import annotations

import io

import docx
import psycopg
import pytest

from tests.io.test_documents import DOCX, ask, pdf_file, upload

HEADER = ["Dish", "Size", "Price"]
DISHES = [
    "Minestrone",
    "Caesar salad",
    "Caprese salad",
    "Lasagne",
    "Spaghetti carbonara",
    "Penne arrabbiata",
    "Risotto ai funghi",
    "Gnocchi al pesto",
    "Ravioli di ricotta",
    "Tagliatelle al ragù",
    "Calzone",
    "Focaccia",
    "Bruschetta",
    "Tiramisu",
    "Panna cotta",
    "Cannoli",
    "Affogato",
]
#: many rows, the pizza's in the middle: the table takes several chunks
MENU = [
    *([dish, "regular", f"{7 + n % 9}.90"] for n, dish in enumerate(DISHES[:9])),
    ["Pizza", "small", "8.50"],
    ["Pizza", "medium", "11.00"],
    ["Pizza", "large", "14.50"],
    *([dish, "regular", f"{5 + n % 7}.40"] for n, dish in enumerate(DISHES[9:])),
    *([f"{dish} (to share)", "family", f"{19 + n}.00"] for n, dish in enumerate(DISHES)),
]


def menu_html() -> bytes:
    head = "".join(f"<th>{name}</th>" for name in HEADER)
    rows = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in MENU)
    return (
        "<html><body><h1>Menu</h1><p>All dishes are made to order.</p>"
        f"<table><tr>{head}</tr>{rows}</table></body></html>"
    ).encode()


def menu_csv() -> bytes:
    return "\n".join(",".join(row) for row in [HEADER, *MENU]).encode()


def menu_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Menu", 1)
    document.add_paragraph("All dishes are made to order.")
    table = document.add_table(rows=len(MENU) + 1, cols=len(HEADER))
    for row, cells in zip(table.rows, [HEADER, *MENU], strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def menu_pdf() -> bytes:
    """The menu as a PDF with a text layer, its table ruled as word processors draw one
    (hand-made bytes, Helvetica; a box around each cell)."""
    columns, height, top = (72, 252, 372, 472), 16, 700
    ops = ["BT /F1 16 Tf 72 740 Td (Menu) Tj ET"]
    ops.append("BT /F1 11 Tf 72 720 Td (All dishes are made to order.) Tj ET")
    for r, row in enumerate([HEADER, *MENU]):
        y = top - r * height
        for c, cell in enumerate(row):
            text = cell.replace("(", "\\(").replace(")", "\\)")  # a PDF string
            ops.append(f"BT /F1 10 Tf {columns[c] + 4} {y - 12} Td ({text}) Tj ET")
            ops.append(f"{columns[c]} {y - height} {columns[c + 1] - columns[c]} {height} re S")
    ops.append(f"BT /F1 11 Tf 72 {top - (len(MENU) + 1) * height - 24} Td (Prices in euros.) Tj ET")
    return menu_pdf_with("\n".join(ops))


def menu_pdf_with(content: str) -> bytes:
    """A one-page PDF (hand-made bytes, Helvetica) drawing ``content``."""
    stream = content.encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    return pdf_file(objects)


def chunk_text(database_url: str, chunk_id: int) -> str:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT text FROM chunks WHERE id = %s", (chunk_id,)).fetchone()[0]


@pytest.mark.parametrize(
    ("filename", "make", "content_type"),
    [
        ("menu.html", menu_html, "text/html"),
        ("menu.csv", menu_csv, "text/csv"),
        ("menu.docx", menu_docx, DOCX),
        ("menu.pdf", menu_pdf, "application/pdf"),
    ],
)
async def test_a_row_is_cited_with_its_column_names(
    api, database_url, filename, make, content_type
):
    stored = await upload(api, filename, make(), content_type)
    assert stored.status_code == 201, stored.text
    assert stored.json()["chunk_count"] >= 3  # the table is cut, between rows

    answer = await ask(api, "How much is the large pizza?")
    assert "14.50" in answer["answer"]
    [cited, *_] = answer["citations"]
    assert cited["document_name"] == filename
    chunk = chunk_text(database_url, cited["chunk_id"])
    assert "\nDish: Pizza; Size: large; Price: 14.50\n" in chunk  # the row, its columns named
    with psycopg.connect(database_url) as conn:
        texts = [t for (t,) in conn.execute("SELECT text FROM chunks ORDER BY position")]
    rows = [line for text in texts for line in text.split("\n") if line.startswith("Dish: ")]
    assert rows == [
        "; ".join(f"{name}: {value}" for name, value in zip(HEADER, row, strict=True))
        for row in MENU
    ]  # every row whole, once, in order


def test_a_box_drawn_around_a_paragraph_stays_text():
    from ragcore.knowledge.documents import FORMAT_NAMED
    from ragio.knowledge.formats import extract_text

    text = extract_text(menu_pdf(), FORMAT_NAMED["pdf"])
    assert "| Pizza | large | 14.50 |" in text  # the grid is a table
    one_box = boxed_paragraph_pdf()
    text = extract_text(one_box, FORMAT_NAMED["pdf"])
    assert "|" not in text and "Keep this door closed." in text


def boxed_paragraph_pdf() -> bytes:
    """A page whose only drawing is a framed note: a box with a title bar above its
    paragraph (one column of two cells)."""
    corners = [(70, 560), (370, 560), (370, 660), (70, 660), (70, 560)]
    sides = [f"{x} {y} m {u} {v} l S" for (x, y), (u, v) in zip(corners, corners[1:], strict=False)]
    box = " ".join([*sides, "70 630 m 370 630 l S"])
    title = "BT /F1 11 Tf 80 640 Td (Notice) Tj ET"
    text = "BT /F1 11 Tf 80 600 Td (Keep this door closed.) Tj ET"
    return menu_pdf_with("\n".join([box, title, text]))
