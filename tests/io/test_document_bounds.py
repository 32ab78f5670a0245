"""The work one document may cause is bounded, with a 413 that says which bound, and the
work stops when the client that asked for it goes away.

Before: a 66 KB Word file whose XML unpacks to 10 MB (150,000 short paragraphs) kept a
core busy for about 9.5 minutes, was never answered, and kept running after its client
left."""

from __future__ import annotations

import io
import time
import zipfile

import docx
import httpx
import pytest
import trio

from ragcore.knowledge import formats
from tests.io.processes import run_cli
from tests.io.test_documents import DOCX, make_pdf
from tests.io.test_http_errors import assert_problem, count_rows
from tests.io.test_unstorable_input import rows


def word_file(paragraphs: int, text: str = "x", *, pad_xml: int = 0) -> bytes:
    """A real .docx whose body holds ``paragraphs`` paragraphs of ``text``, written straight
    into the package (python-docx would take minutes to add so many); ``pad_xml`` bytes of
    an XML comment make its XML unpack larger without more paragraphs."""
    template = io.BytesIO()
    docx.Document().save(template)
    source = zipfile.ZipFile(template)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                body = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" * paragraphs
                padding = f"<!--{' ' * pad_xml}-->" if pad_xml else ""
                data = data.replace(b"<w:body>", f"<w:body>{padding}{body}".encode(), 1)
            package.writestr(info.filename, data)
    return out.getvalue()


def html_page(paragraphs: int) -> bytes:
    rows_ = "".join(
        f"<div><p>Paragraph {i} is about <b>refunds</b> and returns.</p></div>"
        for i in range(paragraphs)
    )
    return f"<html><body>{rows_}</body></html>".encode()


async def upload(api: httpx.AsyncClient, name: str, data: bytes, media: str) -> httpx.Response:
    return await api.post("/documents", files={"file": (name, data, media)})


async def test_the_word_file_bomb_is_refused_quickly_and_stores_nothing(api, database_url):
    bomb = word_file(150_000)
    assert len(bomb) < 100_000  # a small file…
    with zipfile.ZipFile(io.BytesIO(bomb)) as package:  # …whose XML unpacks to megabytes
        assert package.getinfo("word/document.xml").file_size > 5_000_000
    started = time.monotonic()
    response = await upload(api, "bomb.docx", bomb, DOCX)
    elapsed = time.monotonic() - started
    body = assert_problem(response, 413, "150000 paragraphs and table rows; the limit is 50000")
    assert body["field"] == "file"
    assert elapsed < 5, elapsed
    assert count_rows(database_url) == (0, 0)


async def test_word_xml_unpacking_beyond_the_limit_is_refused_unread(api, database_url):
    bomb = word_file(1, pad_xml=formats.MAX_DOCX_XML_BYTES)
    assert len(bomb) < 200_000
    started = time.monotonic()
    response = await upload(api, "padded.docx", bomb, DOCX)
    assert_problem(response, 413, "MB of XML")
    assert time.monotonic() - started < 3
    assert count_rows(database_url) == (0, 0)


async def test_a_long_word_file_is_still_read_and_fast(api):
    """Many paragraphs under the limit are read in seconds: a paragraph's style is worked
    out once per style, not once per paragraph (10,000 paragraphs took 70 s before)."""
    started = time.monotonic()
    response = await upload(api, "long.docx", word_file(10_000, "Refunds"), DOCX)
    assert response.status_code == 201, response.text
    assert time.monotonic() - started < 30


@pytest.fixture
def settings_overrides(request):
    # every upload read in its request, however large: these are the request's bounds
    # (a job is held to the reading bounds too: tests/io/test_document_jobs.py)
    return {"ingest_job_bytes": 26214400, **getattr(request, "param", {})}


@pytest.mark.parametrize("settings_overrides", [{"max_document_chunks": 5}], indirect=True)
async def test_a_document_over_the_chunk_limit_is_413_and_ingest_takes_it(
    api, database_url, tmp_path
):
    text = "\n\n".join(f"Refund rule {i}: " + "returns are accepted " * 60 for i in range(12))
    response = await api.post("/documents", json={"name": "rules.md", "text": text})
    body = assert_problem(response, 413, "MAX_DOCUMENT_CHUNKS")
    assert body["field"] == "text"
    assert "ragchat ingest" in body["detail"]
    response = await upload(api, "rules.md", text.encode(), "text/markdown")
    assert assert_problem(response, 413, "chunks")["field"] == "file"
    assert count_rows(database_url) == (0, 0)

    path = tmp_path / "rules.md"
    path.write_text(text)
    result = await trio.to_thread.run_sync(
        lambda: run_cli("ingest", str(path), cwd=tmp_path, database_url=database_url)
    )
    assert result.returncode == 0, result.stderr
    documents, chunks = count_rows(database_url)
    assert documents == 1 and chunks > 5


@pytest.mark.parametrize("settings_overrides", [{"max_document_read_seconds": 0.2}], indirect=True)
async def test_a_file_that_takes_too_long_to_read_is_413(api, database_url):
    response = await upload(api, "site.html", html_page(200_000), "text/html")
    assert_problem(response, 413, "MAX_DOCUMENT_READ_SECONDS")
    assert count_rows(database_url) == (0, 0)


async def test_a_pdf_with_too_many_pages_is_413_before_any_page_is_read(api, database_url):
    pages = [["Refunds take five days."]] * (formats.MAX_PDF_PAGES + 1)
    started = time.monotonic()
    response = await upload(api, "manual.pdf", make_pdf(pages), "application/pdf")
    assert_problem(response, 413, f"{len(pages)} pages; the limit is {formats.MAX_PDF_PAGES}")
    assert time.monotonic() - started < 10
    assert count_rows(database_url) == (0, 0)


async def test_reading_stops_when_the_client_goes_away(api, database_url):
    """A large file's reading is stopped once its client disconnects: the process is idle
    again within a moment, where before the worker thread read the file to its end."""
    page = html_page(300_000)  # about 20 MB: seconds of parsing
    with trio.move_on_after(2):  # the upload is sent, then the client gives up waiting
        await upload(api, "site.html", page, "text/html")
        pytest.fail("a 20 MB page was read in under 2 seconds: the test needs a slower one")
    await trio.sleep(0.5)  # the disconnect reaches the request, which cancels the reading
    cpu, wall = time.process_time(), time.monotonic()
    await trio.sleep(2)
    busy = (time.process_time() - cpu) / (time.monotonic() - wall)
    assert busy < 0.3, f"the process still used {busy:.0%} of a core after the client left"
    assert rows(database_url)["documents"] == 0
