#!/usr/bin/env python3
"""Seconds of OCR a page on this machine: scanned PDFs and photos, read as an upload is.

    python scripts/bench_ocr.py                  # 6 pages at 200 and 300 dpi, and photos
    python scripts/bench_ocr.py --pages 20 --dpi 300 --languages en de

The pages: A4 sheets of printed prose (about 1,800 characters each), drawn by Pillow and
saved as a PDF with no text layer (each page one JPEG, as a scanner writes them); the
photos: a card on grainy, tinted paper, a little askew (read again smoothed, see
``ragio.knowledge.ocr.read_image``). Each is read by ``extract_text``, the uploads'
own reading, so the figure includes pypdf's and Pillow's decoding. Also printed: the
share of the page's words read back. Needs Tesseract on PATH (apt-get install
tesseract-ocr); it runs with one thread, as the service runs it.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import textwrap
import time
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from ragcore.knowledge.documents import FORMAT_NAMED  # noqa: E402
from ragio.knowledge.formats import extract_text  # noqa: E402

PROSE = (
    "Refunds are paid within seven business days of the return reaching our warehouse. "
    "Items must be unused and in their original packaging; opened software and gift "
    "cards cannot be returned. Orders above 250 EUR ship free within the European Union, "
    "and customers in Switzerland and Norway pay the duties on delivery. Our support "
    "line answers from 8:30 to 17:00 on weekdays, and on Saturdays until noon. "
)


def page(number: int, dpi: int) -> Image.Image:
    """An A4 page at ``dpi`` with about 1,800 characters of 11-point prose."""
    width, height = round(8.27 * dpi), round(11.69 * dpi)
    sheet = Image.new("L", (width, height), 255)
    font = ImageFont.load_default(size=round(11 / 72 * dpi))
    text = f"Page {number}\n\n" + "\n".join(textwrap.wrap(PROSE * 4, 80))
    margin = dpi  # an inch
    ImageDraw.Draw(sheet).multiline_text((margin, margin), text, font=font, fill=20, spacing=8)
    return sheet


def scanned_pdf(pages: int, dpi: int) -> bytes:
    sheets = [page(n + 1, dpi) for n in range(pages)]
    out = io.BytesIO()
    sheets[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=sheets[1:])
    return out.getvalue()


def photo(grain: int) -> bytes:
    size = (1400, 500)
    noise = Image.effect_noise(size, grain)
    shade = Image.linear_gradient("L").rotate(90).resize(size).point(lambda v: v // 5)
    paper = Image.blend(noise, shade, 0.5)
    card = Image.merge(
        "RGB", [paper.point(lambda v, t=t: min(255, t - 60 + v)) for t in (235, 222, 190)]
    )
    font = ImageFont.load_default(size=44)
    text = "Sunday brunch is served\nfrom 10:30 until 14:00."
    ImageDraw.Draw(card).multiline_text((70, 130), text, font=font, fill=(50, 40, 100), spacing=24)
    out = io.BytesIO()
    card.rotate(1.5, fillcolor=(200, 190, 160)).save(out, "PNG")
    return out.getvalue()


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def recall(read: str, expected: str) -> float:
    """The share of the expected words read back (each as often as it is expected)."""
    found = words(read)
    hits = sum(min(found.count(w), n) for w, n in _counts(words(expected)).items())
    return hits / max(len(words(expected)), 1)


def _counts(items: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--dpi", type=int, nargs="+", default=[200, 300])
    parser.add_argument("--languages", nargs="+", default=["en"], help="ISO 639-1 codes")
    args = parser.parse_args()
    languages = tuple(args.languages)
    print(f"OCR in {'+'.join(languages)}, {args.pages} pages a PDF, one Tesseract thread")
    for dpi in args.dpi:
        pdf = scanned_pdf(args.pages, dpi)
        started = time.perf_counter()
        text = extract_text(pdf, FORMAT_NAMED["pdf"], languages=languages)
        seconds = time.perf_counter() - started
        expected = " ".join(f"Page {n + 1} {PROSE * 4}" for n in range(args.pages))
        print(
            f"scanned A4 at {dpi} dpi: {seconds / args.pages:.2f} s a page "
            f"({len(pdf) / args.pages / 1024:.0f} KB a page), {recall(text, expected):.1%} "
            "of the words read"
        )
    for grain in (20, 60):
        data = photo(grain)
        started = time.perf_counter()
        text = extract_text(data, FORMAT_NAMED["png"], languages=languages)
        seconds = time.perf_counter() - started
        expected = "Sunday brunch is served from 10:30 until 14:00."
        print(
            f"photo 1400x500, grain {grain}: {seconds:.2f} s, {recall(text, expected):.0%} "
            "of the words read"
        )


if __name__ == "__main__":
    main()
