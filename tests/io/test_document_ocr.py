"""Scanned documents and images are read with Tesseract (OCR): a scanned PDF and a photo
uploaded over HTTP are answered from, with a citation; without Tesseract such a file is
a 422 naming what to install, and an image too large to read a 413 before it is decoded."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFont

from ragcore.knowledge import formats
from tests.io.test_documents import PDF, ask, chunks_of, upload
from tests.io.test_http_errors import assert_problem, count_rows


@pytest.fixture
def settings_overrides(request):
    # a photo of grain is a large PNG: read in its request, not as a job (which reads the same)
    return {"ingest_job_bytes": 26214400, **getattr(request, "param", {})}


def scanned_page(text: str) -> Image.Image:
    """A page as a scanner sees it: an A4 sheet at 200 dpi, its text an image."""
    page = Image.new("L", (1654, 2339), 255)
    font = ImageFont.load_default(size=36)
    ImageDraw.Draw(page).multiline_text((160, 240), text, font=font, fill=20, spacing=18)
    return page


def scanned_pdf(*pages: str) -> bytes:
    """A PDF of scanned pages: each page one image, no text layer."""
    images = [scanned_page(text) for text in pages]
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=200, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def photo(text: str, fmt: str = "PNG") -> bytes:
    """A photo of a card: tinted paper, grainy and shaded, the text a little askew."""
    size = (1400, 500)
    grain = Image.effect_noise(size, 60)
    shade = Image.linear_gradient("L").rotate(90).resize(size).point(lambda v: v // 5)
    paper = Image.blend(grain, shade, 0.5)
    card = Image.merge(
        "RGB",
        [paper.point(lambda v, tint=tint: min(255, tint - 60 + v)) for tint in (235, 222, 190)],
    )
    font = ImageFont.load_default(size=44)
    ImageDraw.Draw(card).multiline_text((70, 130), text, font=font, fill=(50, 40, 100), spacing=24)
    buffer = io.BytesIO()
    card.rotate(1.5, fillcolor=(200, 190, 160)).save(buffer, fmt)
    return buffer.getvalue()


async def test_a_scanned_pdf_is_read_by_ocr_and_answered_from_with_its_page(api):
    pdf = scanned_pdf(
        "Cover page\n\nCustomer handbook",
        "Refunds\n\nRefunds are paid within seven business days\nof the return reaching us.",
    )
    stored = await upload(api, "scanned-handbook.pdf", pdf, PDF)
    assert stored.status_code == 201, stored.text
    text = await chunks_of(api, stored.json()["id"])
    assert text.startswith("# Page 1\n\nCover page")
    assert "# Page 2\n\nRefunds\n\nRefunds are paid within seven business days" in text

    answer = await ask(api, "How fast are refunds paid?")
    assert "seven business days" in answer["answer"]
    [cited, *_] = answer["citations"]
    assert cited["document_name"] == "scanned-handbook.pdf"
    assert cited["heading_path"] == ["Page 2"]


async def test_a_photo_is_read_by_ocr_and_answered_from(api):
    stored = await upload(
        api,
        "brunch-card.png",
        photo("Sunday brunch is served\nfrom 10:30 until 14:00."),
        "image/png",
    )
    assert stored.status_code == 201, stored.text
    assert stored.json()["content_type"] == "image/png"

    answer = await ask(api, "When is Sunday brunch served?")
    assert "10:30 until 14:00" in answer["answer"]
    assert answer["citations"][0]["document_name"] == "brunch-card.png"


async def test_jpeg_and_multi_page_tiff_files_are_read_too(api):
    jpeg = await upload(api, "hours", photo("The shop opens at nine.", "JPEG"), "image/jpeg")
    assert "The shop opens at nine." in await chunks_of(api, jpeg.json()["id"])

    pages = [
        scanned_page("Deliveries come on Mondays."),
        scanned_page("Returns go back on Fridays."),
    ]
    buffer = io.BytesIO()
    pages[0].save(buffer, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_lzw")
    tiff = await upload(api, "week.tiff", buffer.getvalue(), "image/tiff")
    assert await chunks_of(api, tiff.json()["id"]) == (
        "# Page 1\n\nDeliveries come on Mondays.\n\n# Page 2\n\nReturns go back on Fridays.\n"
    )


async def test_without_tesseract_a_scan_is_422_naming_what_to_install(
    api, database_url, monkeypatch, tmp_path
):
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on it
    for name, data, media in (
        ("scan.pdf", scanned_pdf("Refunds take seven days."), PDF),
        ("card.png", photo("Open on Sundays."), "image/png"),
    ):
        problem = assert_problem(await upload(api, name, data, media), 422, "needs OCR")
        assert "apt-get install tesseract-ocr" in problem["detail"]
    assert count_rows(database_url) == (0, 0)


async def test_an_image_too_large_to_read_is_413_before_it_is_decoded(api, database_url):
    side = int(formats.MAX_OCR_PIXELS**0.5) + 100
    buffer = io.BytesIO()
    Image.new("1", (side, side), 1).save(buffer, "PNG")  # a few kB, unpacking to 40+ MB
    assert len(buffer.getvalue()) < 200_000
    response = await upload(api, "bomb.png", buffer.getvalue(), "image/png")
    assert_problem(response, 413, f"{side} x {side}")
    assert count_rows(database_url) == (0, 0)


@pytest.mark.parametrize("settings_overrides", [{"max_document_read_seconds": 0.3}], indirect=True)
async def test_ocr_past_the_reading_time_is_413_and_tesseract_is_stopped(api, database_url):
    pages = [f"Page {n}: refunds are paid within seven business days." for n in range(8)]
    response = await upload(api, "long-scan.pdf", scanned_pdf(*pages), PDF)
    assert_problem(response, 413, "MAX_DOCUMENT_READ_SECONDS")
    assert count_rows(database_url) == (0, 0)
    assert not tesseracts_running()


def tesseracts_running() -> list[int]:
    """The tesseract processes this test process started, still running."""
    import psutil

    return [p.pid for p in psutil.Process().children(recursive=True) if p.name() == "tesseract"]


async def test_an_image_with_no_text_is_422(api):
    buffer = io.BytesIO()
    Image.new("RGB", (600, 400), (90, 140, 200)).save(buffer, "PNG")
    assert_problem(await upload(api, "sky.png", buffer.getvalue(), "image/png"), 422, "no text")
