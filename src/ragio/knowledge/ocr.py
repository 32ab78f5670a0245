"""Reading text in images with Tesseract: scanned PDF pages, and PNG, JPEG and TIFF files.

Tesseract (Debian's ``tesseract-ocr`` and a ``tesseract-ocr-LANG`` package a language)
is run as a program, one page at a time: the image, decoded by Pillow, is given to it
as a PNM file (no decoding to do), the text comes back on its standard output. No
wrapper library: its command line is small and stable, and a process of its own can be
killed, which a library call in our worker thread could not. It runs with one thread
(``OMP_THREAD_LIMIT=1``): the service shares its cores with other requests.

Bounded as every reader is (``ragcore.knowledge.formats``): an image's size is checked
from its header before it is decoded (MAX_OCR_PIXELS), the pages read by OCR are counted
first (MAX_OCR_PAGES), and while Tesseract runs the reading's ``check`` is called every
``POLL_SECONDS``: past MAX_DOCUMENT_READ_SECONDS, or once the request waiting for it is
cancelled, the process is killed.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator

from PIL import Image, ImageFilter, ImageSequence, UnidentifiedImageError
from pypdf import PageObject

from ragcore.errors import InvalidInput
from ragcore.knowledge.formats import (
    Check,
    Unreadable,
    check_image_size,
    check_ocr_pages,
    image_too_large,
    legible,
    letter_count,
    ocr_languages,
    short_reason,
)

PROGRAM = "tesseract"
#: how often a running Tesseract is checked on (the reading's deadline, cancellation)
POLL_SECONDS = 0.2


def installed_languages() -> list[str] | None:
    """The languages Tesseract reads here (its names: eng, deu, …); None when it is not
    installed. Asked every time a file needs it: a package installed later counts."""
    program = shutil.which(PROGRAM)
    if program is None:
        return None
    try:
        listed = subprocess.run(
            [program, "--list-langs"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return [line.strip() for line in listed.stdout.splitlines()[1:] if line.strip()]


def tesseract_languages(wanted: tuple[str, ...]) -> str:
    """Tesseract's ``-l`` for the documents' languages; Unreadable naming what to install."""
    return ocr_languages(wanted, installed_languages())


def image_frames(data: bytes, check: Check) -> Iterator[Image.Image]:
    """The pages of an image file (one, or a multi-page TIFF's), decoded one at a time
    (``plain``), each checked for size before; Unreadable when it is no image Pillow reads."""
    try:
        with warnings.catch_warnings():  # Pillow warns past 89 million pixels: ours is lower
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            check_ocr_pages(getattr(image, "n_frames", 1))
            for frame in ImageSequence.Iterator(image):
                check()
                check_image_size(*frame.size)
                yield plain(frame)
    except InvalidInput:  # a bound passed, or no image: said as it is
        raise
    except Image.DecompressionBombError:  # refused by Pillow as it opened it
        limit = 2 * (Image.MAX_IMAGE_PIXELS or 0) // 1_000_000
        raise image_too_large(f"more than {limit} million") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as error:
        raise Unreadable(f"is not a readable image ({short_reason(error)})") from None


def plain(image: Image.Image) -> Image.Image:
    """The image decoded, as 8-bit grey or RGB (transparency over white, as it is shown):
    Tesseract turns colour to grey itself, better than a grey we made (a dark text on a
    green card was read from its colours, and not at all from Pillow's grey)."""
    if image.mode in ("1", "L", "I;16", "I", "F"):
        return image.convert("L")
    if image.mode in ("RGBA", "LA", "P", "PA"):
        image = image.convert("RGBA")
        return Image.alpha_composite(Image.new("RGBA", image.size, "white"), image).convert("RGB")
    return image.convert("RGB")


def read_image(image: Image.Image, languages: str, check: Check) -> str:
    """The text in ``image``; read again with its noise smoothed (a 3-pixel median) when
    it gave next to no text: a photo's grain hides the letters from Tesseract's
    thresholding (a card photographed on grainy paper: nothing, then every word). A
    clean scan is not smoothed: it may cost a character of small print ("(" as "‘")."""
    text = recognize(image, languages, check)
    if legible(text):
        return text
    check()
    smoothed = recognize(image.filter(ImageFilter.MedianFilter(3)), languages, check)
    return max(text, smoothed, key=letter_count)


def recognize(image: Image.Image, languages: str, check: Check) -> str:
    """The text Tesseract reads in ``image`` (with ``languages``, its ``-l``), its
    process killed when ``check`` raises (the reading's deadline, or cancellation)."""
    with tempfile.NamedTemporaryFile(prefix="ragchat-ocr-", suffix=".pnm") as file:
        image.save(file, "PPM")  # binary PGM or PPM: read with no decoding
        file.flush()
        process = subprocess.Popen(
            [PROGRAM, file.name, "stdout", "-l", languages],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
        with process:
            out, err = _wait(process, check)
    if process.returncode:
        reason = " ".join(err.decode("utf-8", "replace").split())[-200:]
        raise Unreadable(f"could not be read by OCR ({reason or process.returncode})")
    return out.decode("utf-8", "replace")


def _wait(process: subprocess.Popen[bytes], check: Check) -> tuple[bytes, bytes]:
    """Tesseract's output, calling ``check`` while it runs; killed if check raises. (Its
    image is a file, not its standard input: ``communicate`` retried after a timeout
    would never close a pipe it had not finished writing.)"""
    try:
        while True:
            try:
                return process.communicate(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                check()
    except BaseException:
        process.kill()
        process.communicate()
        raise


def pdf_page_images(page: PageObject) -> Iterator[Image.Image]:
    """The images on a pypdf page (``plain``): their sizes checked in the page's dictionary
    before pypdf decodes any, each checked again once decoded (one drawn inline, or in
    a form, is not in that dictionary)."""
    resources = page.get("/Resources")
    objects = resources.get_object().get("/XObject") if resources is not None else None
    for ref in objects.get_object().values() if objects is not None else ():
        xobject = ref.get_object()
        if xobject.get("/Subtype") == "/Image":
            check_image_size(int(xobject.get("/Width", 0)), int(xobject.get("/Height", 0)))
    for image in page.images:
        decoded = image.image
        if decoded is None:  # a kind pypdf gives undecoded
            raise ValueError(f"an image pypdf cannot decode ({image.name})")
        check_image_size(*decoded.size)
        yield plain(decoded)
