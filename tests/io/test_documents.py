"""/documents over real HTTP: each format uploaded as multipart, listed, read, deleted."""

from __future__ import annotations

import io

import docx
import httpx
import pytest

from ragcore.knowledge.documents import EMBED_BATCH
from tests.io.test_http_errors import assert_problem, count_rows

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def make_pdf(pages: list[list[str]]) -> bytes:
    """A PDF with a text layer, one page per list of lines (hand-made bytes, Helvetica)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops += [f"({escaped}) Tj", "T*"]
        stream = "\n".join([*ops, "ET"]).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_file(objects)


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1, the first the catalog), with its
    cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Staff handbook", 0)
    document.add_heading("Leave", 1)
    document.add_paragraph("Staff get 25 days of paid leave a year.")
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(
        table.rows, [("Team", "Manager"), ("Sales", "Ada"), ("Support", "Grace")], strict=True
    ):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def locked_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([["Secret plans."]]))))
    writer.encrypt("open sesame", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


HTML = b"""<!doctype html><html><head><title>Shop</title><style>p {color: red}</style></head>
<body><nav>Home | Contact</nav><h1>Opening hours</h1>
<p>We open at <b>9 am</b> on weekdays.</p><script>alert("not text")</script>
<h2>Holidays</h2><p>We close on <i>public holidays</i>.</p></body></html>"""

CSV = b"product;price;stock\nGreen tea;3.50;12\nBlack coffee;4.00;0\n"


async def upload(api: httpx.AsyncClient, filename: str, data: bytes, content_type: str, **form):
    return await api.post(
        "/documents", files={"file": (filename, data, content_type)}, data=form or None
    )


async def ask(api: httpx.AsyncClient, question: str) -> dict:
    response = await api.post("/chat", params={"question": question})
    assert response.status_code == 200, response.text
    return response.json()


async def chunks_of(api: httpx.AsyncClient, document_id: int) -> str:
    response = await api.get(f"/documents/{document_id}")
    assert response.status_code == 200, response.text
    return response.json()["text"]


@pytest.mark.parametrize(
    ("filename", "data", "content_type", "stored_type", "question", "expected"),
    [
        (
            "hours.txt",
            b"The shop opens at 9 am on weekdays.",
            "text/plain",
            "text/plain",
            "When does the shop open?",
            "9 am",
        ),
        (
            "returns.md",
            "# Returns\n\nItems can be returned within 30 days. Grüße!".encode(),
            "text/markdown",
            "text/markdown",
            "How long can items be returned?",
            "30 days",
        ),
        ("hours.html", HTML, "text/html", "text/html", "When do you open?", "9 am"),
        (
            "policy.pdf",
            make_pdf([["Cover page"], ["Refunds are paid within 5 business days."]]),
            PDF,
            PDF,
            "How fast are refunds paid?",
            "5 business days",
        ),
        (
            "handbook.docx",
            make_docx(),
            "application/octet-stream",  # what many clients send: the suffix decides
            DOCX,
            "How many days of paid leave do staff get?",
            "25 days",
        ),
        ("stock.csv", CSV, "text/csv", "text/csv", "What is the price of green tea?", "3.50"),
    ],
)
async def test_each_format_is_uploaded_and_answered_from(
    api, filename, data, content_type, stored_type, question, expected
):
    response = await upload(api, filename, data, content_type)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["name"] == filename
    assert body["duplicate"] is False
    assert body["content_type"] == stored_type
    assert body["size_bytes"] == len(data)
    assert body["chunk_count"] >= 1
    assert body["created_at"]
    assert response.headers["location"] == f"/documents/{body['id']}"

    answer = await ask(api, question)
    assert expected in answer["answer"]
    assert answer["citations"][0]["document_name"] == filename


async def test_structure_is_kept_headings_pages_and_table_rows(api):
    html = (await upload(api, "hours.html", HTML, "text/html")).json()
    text = await chunks_of(api, html["id"])
    assert "# Opening hours\n\nWe open at 9 am on weekdays." in text
    assert "## Holidays" in text
    assert "alert" not in text and "color" not in text and "Home | Contact" not in text

    pdf = make_pdf([["Cover page"], ["Refunds are paid within 5 business days."]])
    stored = (await upload(api, "policy.pdf", pdf, PDF)).json()
    assert stored["chunk_count"] == 2  # a chunk never straddles two pages
    text = await chunks_of(api, stored["id"])
    assert text.startswith("# Page 1\n\nCover page\n\n# Page 2\n\nRefunds are paid")

    text = await chunks_of(
        api, (await upload(api, "handbook.docx", make_docx(), DOCX)).json()["id"]
    )
    assert "# Staff handbook\n\n## Leave\n\nStaff get 25 days" in text
    assert "| Team | Manager |\n| --- | --- |\n| Sales | Ada |\n| Support | Grace |" in text

    text = await chunks_of(api, (await upload(api, "stock.csv", CSV, "text/csv")).json()["id"])
    assert text.split("\n")[2] == "| Green tea | 3.50 | 12 |"


async def test_legacy_windows_text_and_an_excel_bom_are_read(api):
    latin = await upload(api, "prix.csv", "produit;prix\nthé;3\n".encode("cp1252"), "text/csv")
    assert "| thé | 3 |" in await chunks_of(api, latin.json()["id"])
    excel = await upload(api, "stock.csv", b"\xef\xbb\xbfitem,count\npens,4\n", "text/csv")
    assert (await chunks_of(api, excel.json()["id"])).startswith("| item | count |")


async def test_a_name_field_overrides_the_file_name_and_a_path_is_cut_off(api):
    named = await upload(api, "export.txt", b"Orders ship within 2 days.", "text/plain", name="FAQ")
    assert named.json()["name"] == "FAQ"
    pathy = await upload(api, "C:\\Users\\ada\\notes.txt", b"Notes here.", "text/plain")
    assert pathy.json()["name"] == "notes.txt"


async def test_the_same_content_uploaded_again_is_not_stored_twice(api, database_url):
    first = await upload(api, "handbook.docx", make_docx(), DOCX)
    again = await upload(api, "handbook-copy.docx", make_docx(), DOCX)
    assert again.status_code == 200
    assert again.json() == {**first.json(), "duplicate": True}
    assert count_rows(database_url)[0] == 1

    as_json = await api.post("/documents", json={"name": "a.md", "text": "Same text."})
    as_file = await upload(api, "b.md", b"Same text.\n", "text/markdown")
    assert as_file.json()["duplicate"] is True
    assert as_file.json()["id"] == as_json.json()["id"]


async def test_json_documents_say_their_type_and_size_too(api):
    response = await api.post("/documents", json={"name": "faq.md", "text": "# FAQ\n\nÜber uns."})
    body = response.json()
    assert (body["content_type"], body["size_bytes"]) == (
        "text/markdown",
        17,
    )  # Ü is two bytes in UTF-8


async def test_list_get_and_delete(api, database_url):
    a = (await upload(api, "a.txt", b"Alpha facts about apples.", "text/plain")).json()
    b = (await upload(api, "b.txt", b"Beta facts about bananas.", "text/plain")).json()

    listed = (await api.get("/documents")).json()["documents"]
    assert [(d["id"], d["name"], d["size_bytes"]) for d in listed] == [
        (a["id"], "a.txt", 25),
        (b["id"], "b.txt", 25),
    ]
    one = (await api.get(f"/documents/{a['id']}")).json()
    assert one["text"] == "Alpha facts about apples."
    listed_fields = [k for k in a if k not in ("duplicate", "replaced")]
    assert {k: one[k] for k in listed_fields} == {k: a[k] for k in listed_fields}

    deleted = await api.delete(f"/documents/{a['id']}")
    assert deleted.status_code == 204 and deleted.content == b""
    assert [d["id"] for d in (await api.get("/documents")).json()["documents"]] == [b["id"]]
    assert_problem(await api.get(f"/documents/{a['id']}"), 404, str(a["id"]))
    assert_problem(await api.delete(f"/documents/{a['id']}"), 404)
    assert count_rows(database_url) == (1, b["chunk_count"])


async def test_a_deleted_document_is_no_longer_cited(api):
    doc = (await upload(api, "refunds.txt", b"Refunds take 5 business days.", "text/plain")).json()
    assert (await ask(api, "How long do refunds take?"))["citations"]
    await api.delete(f"/documents/{doc['id']}")
    answer = await ask(api, "How long do refunds take?")
    assert answer["citations"] == []
    assert "5 business days" not in answer["answer"]


@pytest.mark.parametrize("bad_id", ["abc", "0", "-1", "99999999999999999999", "1.5"])
async def test_a_malformed_id_is_404(api, bad_id):
    assert_problem(await api.get(f"/documents/{bad_id}"), 404, "no document")


async def test_an_unsupported_type_is_415_naming_the_supported_ones(api, database_url):
    response = await upload(api, "clip.mp4", b"\x00\x00\x00\x18ftypmp42", "video/mp4")
    problem = assert_problem(response, 415, "clip.mp4")
    for name in ("txt", "md", "html", "pdf", "docx", "csv", "png", "jpg", "tif"):
        assert name in problem["detail"]
    assert count_rows(database_url) == (0, 0)


@pytest.mark.parametrize(
    ("filename", "data", "content_type", "detail"),
    [
        ("empty.txt", b"", "text/plain", "empty"),
        ("blank.md", b"  \n\n  ", "text/markdown", "no text"),
        ("broken.pdf", b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog", PDF, "not a readable PDF"),
        ("fake.pdf", b"just some text", PDF, "not a PDF"),
        ("blank.pdf", make_pdf([[], []]), PDF, "no text layer"),
        ("locked.pdf", locked_pdf(), PDF, "password"),
        ("fake.docx", b"PK\x03\x04 not really a zip", DOCX, "Word"),
        ("header.csv", b"name,price\n", "text/csv", "no rows"),
        ("binary.txt", b"\x00\x01\x02text", "text/plain", "binary"),
    ],
)
async def test_a_file_without_readable_text_is_422_and_writes_nothing(
    api, database_url, filename, data, content_type, detail
):
    problem = assert_problem(await upload(api, filename, data, content_type), 422, detail)
    assert problem["field"] == "file"
    assert count_rows(database_url) == (0, 0)


async def test_a_multipart_body_without_a_file_or_with_strange_fields_is_422(api):
    no_file = await api.post("/documents", files={"name": (None, "x.txt")})
    assert assert_problem(no_file, 422, "required")["field"] == "file"
    extra = await api.post(
        "/documents",
        files={"file": ("a.txt", b"Text.", "text/plain"), "tags": (None, "x")},
    )
    assert_problem(extra, 422, "tags")


async def test_a_body_of_another_type_is_415_saying_what_to_send(api):
    response = await api.post("/documents", content=b"%PDF-1.4", headers={"content-type": PDF})
    assert_problem(response, 415, "multipart/form-data")


class TestWithASmallUploadLimit:
    @pytest.fixture
    def settings_overrides(self):
        return {"max_upload_bytes": 2000}

    async def test_a_file_over_the_limit_is_413_and_writes_nothing(self, api, database_url):
        response = await upload(api, "big.txt", b"word " * 1000, "text/plain")
        assert_problem(response, 413, "MAX_UPLOAD_BYTES")
        assert count_rows(database_url) == (0, 0)

    async def test_a_file_under_the_limit_is_stored(self, api):
        response = await upload(api, "small.txt", b"word " * 300, "text/plain")
        assert response.status_code == 201, response.text


async def test_an_embedding_failure_midway_leaves_no_partial_document(api, service, database_url):
    real = service.embedder

    class FailsOnTheSecondBatch:
        name = real.name
        space = real.space
        calls = 0

        async def embed(self, texts, purpose):
            self.calls += 1
            if self.calls == 2:
                raise RuntimeError("embedding provider down")
            return await real.embed(texts, purpose)

    service.embedder = broken = FailsOnTheSecondBatch()
    sections = "\n\n".join(f"# Topic {i}\n\nFacts about topic {i}." for i in range(EMBED_BATCH + 5))
    response = await upload(api, "long.md", sections.encode(), "text/markdown")
    assert_problem(response, 500)
    assert "embedding provider down" not in response.text
    assert broken.calls == 2
    assert count_rows(database_url) == (0, 0)
