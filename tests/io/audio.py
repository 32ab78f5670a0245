"""Real phone audio for the voice tests: speech synthesised by espeak-ng, converted by sox to
what a phone line carries (G.711 µ-law, 8000 Hz, mono, no header: the bytes a telephony
provider's media stream sends base64-encoded, 160 bytes per 20 ms frame), and transcribed
back by pocketsphinx with the English model its wheel ships. Nothing here uses the network.

All functions are synchronous; from Trio, run ``speak`` and ``transcribe`` in
``trio.to_thread.run_sync``. ``transcribe`` decodes in a worker process, not in the thread:
pocketsphinx holds the GIL for the whole decode (about a second per sentence on this
machine), which would freeze the event loop, and with it the real-time pace of a fake phone
line and the service under test, for as long.

What transcribes reliably. pocketsphinx's general English model on synthetic phone audio is
modest, so tests assert on keywords of sentences that come back the same every time. Measured
(espeak-ng 1.51, sox 14.4.2, pocketsphinx 5.1.1; each sentence framed by 0, 100, 250 and 500 ms
of line silence, as a segmenter would cut it):

- always whole: "can i get a refund", "where is my order", "i want to return an item";
- always the keywords: "How long do I have to return an item" ("how long", "return an item"),
  "Items can be returned within thirty days of delivery" ("thirty days", "return"),
  "What is the price of the blue shirt" ("blue shirt"), "Hello I have a question about my
  bill" ("question", not "bill");
- unreliable: "What are your opening hours" ("open", rarely "hours"), "Do you ship to
  Canada", "Is the store open on Sunday", "Thank you goodbye", "Yes please", "No thank you".

Short plain questions of common words work; names, numbers said as digits and one- or
two-word answers do not. The choices behind this, each measured on 14 sentences (78 words):

- the voice: espeak-ng's ``en-us+klatt`` (Klatt synthesis) is recognised far better than its
  default ``en-us`` voice (45-50 words against 33-35);
- the upsampling to the model's 16 kHz: sox's ``rate`` (51 words) beats numpy linear
  interpolation (39) and FFT zero-padding (35);
- a faint noise floor (Gaussian, 10 of 32768, fixed seed) added before decoding: digital
  silence (µ-law 0xFF, exact zeros) around an utterance costs up to 8 words, the noise floor
  gets them back; and sox's dither is seeded (``-R``), so the same text always gives the same
  bytes and the same transcript;
- pocketsphinx's ``remove_noise`` off: its noise estimate eats quiet synthetic speech.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_RATE = 8000
FRAME_BYTES = 160  # 20 ms of µ-law at 8000 Hz, one byte a sample
SILENCE_BYTE = 0xFF  # µ-law's code for 0
VOICE = "en-us+klatt"  # the espeak-ng voice pocketsphinx recognises best (see above)
TOOL_TIMEOUT = 30.0  # seconds for one espeak-ng or sox run
NOISE_FLOOR = 10.0  # standard deviation, in 16-bit PCM, of the noise added before decoding

# ---------------------------------------------------------------- G.711 µ-law

_SEGMENT_ENDS = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])


def _encoding_table() -> np.ndarray:
    """The µ-law code of every 16-bit sample, as the G.711 reference (and CPython's audioop)
    computes it: the sample's top 14 bits, biased by 33, clipped at 8159, coded as a 3-bit
    segment and a 4-bit step, inverted."""
    pcm = np.arange(-32768, 32768, dtype=np.int32) >> 2
    mask = np.where(pcm < 0, 0x7F, 0xFF)
    magnitude = np.minimum(np.abs(pcm), 8159) + 33
    segment = np.searchsorted(_SEGMENT_ENDS, magnitude)
    code = (segment << 4) | ((magnitude >> (segment + 1)) & 0x0F)
    code = np.where(segment >= 8, 0x7F, code)  # beyond the last segment: the loudest code
    return (code ^ mask).astype(np.uint8)


def _decoding_table() -> np.ndarray:
    code = ~np.arange(256, dtype=np.int32) & 0xFF
    magnitude = (((code & 0x0F) << 3) + 0x84) << ((code & 0x70) >> 4)
    return np.where(code & 0x80, 0x84 - magnitude, magnitude - 0x84).astype(np.int16)


_ENCODE = _encoding_table()
_DECODE = _decoding_table()


def mulaw_to_pcm16(mulaw: bytes) -> np.ndarray:
    """µ-law bytes as 16-bit linear samples (G.711, exact)."""
    return _DECODE[np.frombuffer(mulaw, dtype=np.uint8)]


def pcm16_to_mulaw(pcm: Any) -> bytes:
    """16-bit linear samples (any int16-compatible array) as µ-law bytes (G.711, exact)."""
    samples = np.asarray(pcm, dtype=np.int16).astype(np.int32)
    return _ENCODE[samples + 32768].tobytes()


def _clipped(samples: np.ndarray) -> np.ndarray:
    return np.clip(np.round(samples), -32768, 32767).astype(np.int16)


def attenuate(mulaw: bytes, db: float) -> bytes:
    """``mulaw`` made ``db`` decibels louder (negative: quieter), clipped at full scale."""
    gain = 10.0 ** (db / 20.0)
    return pcm16_to_mulaw(_clipped(mulaw_to_pcm16(mulaw).astype(np.float64) * gain))


def silence(ms: int) -> bytes:
    """``ms`` milliseconds of line silence (µ-law's 0, 0xFF), whole samples."""
    return bytes([SILENCE_BYTE]) * (SAMPLE_RATE * ms // 1000)


def mix(a: bytes, b: bytes) -> bytes:
    """Two signals heard at once: summed as linear samples, clipped; the shorter one is
    padded with silence, so the result is as long as the longer."""
    length = max(len(a), len(b))
    total = np.zeros(length, dtype=np.int32)
    total[: len(a)] += mulaw_to_pcm16(a)
    total[: len(b)] += mulaw_to_pcm16(b)
    return pcm16_to_mulaw(np.clip(total, -32768, 32767))


def duration(mulaw: bytes) -> float:
    """How many seconds of sound ``mulaw`` holds."""
    return len(mulaw) / SAMPLE_RATE


# ---------------------------------------------------------------- speech


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"{name} is not installed: the voice tests need espeak-ng and sox "
            "(Debian: apt-get install espeak-ng sox; scripts/dev.py test installs them as root)"
        )
    return path


def speak(text: str, *, voice: str = VOICE, words_per_minute: int = 150) -> bytes:
    """``text`` said by espeak-ng's ``voice``, as raw µ-law at 8000 Hz: a caller's speech as
    the phone line carries it. The same text always gives the same bytes (cached)."""
    return _speak(text, voice, words_per_minute)


@functools.lru_cache(maxsize=256)
def _speak(text: str, voice: str, words_per_minute: int) -> bytes:
    wav = subprocess.run(
        [_tool("espeak-ng"), "-v", voice, "-s", str(words_per_minute), "--stdout", "--stdin"],
        input=text.encode("utf-8"),  # on stdin: a text starting with "-" is not an option
        capture_output=True,
        check=True,
        timeout=TOOL_TIMEOUT,
    ).stdout
    return _sox(
        wav, ["-t", "wav", "-"], ["-t", "raw", "-r", "8000", "-c", "1", "-e", "mu-law", "-b", "8"]
    )


def _sox(data: bytes, source: list[str], target: list[str]) -> bytes:
    """One sox conversion on pipes; ``-R`` seeds its dither, so output repeats exactly."""
    return subprocess.run(
        [_tool("sox"), "-R", *source, *target, "-"],
        input=data,
        capture_output=True,
        check=True,
        timeout=TOOL_TIMEOUT,
    ).stdout


# ---------------------------------------------------------------- recognition


class _Recognizer:
    """One worker process, ``python -m tests.io.audio``, started on first use and kept (the
    model takes half a second to load), fed one utterance at a time over its stdin and
    answering on its stdout, each message a 4-byte little-endian length and that many bytes.
    A plain subprocess rather than multiprocessing: nothing of the caller's ``__main__`` is
    imported again, so any script may transcribe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        atexit.register(self.stop)

    def __call__(self, mulaw: bytes) -> str:
        with self._lock:
            try:
                return self._ask(mulaw)
            except (OSError, EOFError):  # the worker died: replaced, once
                self.stop()
                return self._ask(mulaw)

    def _ask(self, mulaw: bytes) -> str:
        process = self._started()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(struct.pack("<I", len(mulaw)) + mulaw)
        process.stdin.flush()
        return _read_message(process.stdout).decode("utf-8")

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            root = str(Path(__file__).resolve().parents[2])
            path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.io.audio"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=root,
                env={**os.environ, "PYTHONPATH": path},
            )
        return self._process

    def stop(self) -> None:
        """End the worker: its stdin closed, it exits."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            with contextlib.suppress(OSError):
                process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


_recognizer = _Recognizer()


def transcribe(mulaw: bytes) -> str:
    """What pocketsphinx hears in ``mulaw`` (8 kHz µ-law): lowercase words separated by single
    spaces, "" for none. Blocks for about a second a sentence (three for the first, which
    starts the worker process); calls queue one behind another. See the module's docstring
    for what transcribes reliably."""
    if len(mulaw) < FRAME_BYTES:
        return ""
    return _recognizer(bytes(mulaw))


def _read_message(stream: Any) -> bytes:
    header = stream.read(4)
    if len(header) < 4:
        raise EOFError("the recognizer process ended")
    (size,) = struct.unpack("<I", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the recognizer process ended")
    return data


def _decoder() -> Any:
    from pocketsphinx import Decoder  # only the worker loads the model

    return Decoder(samprate=16000, remove_noise=False)


def _decode(decoder: Any, mulaw: bytes) -> str:
    noise = np.random.default_rng(0).normal(0.0, NOISE_FLOOR, len(mulaw))
    pcm = _clipped(mulaw_to_pcm16(mulaw).astype(np.float64) + noise)
    raw = ["-t", "raw", "-e", "signed", "-b", "16", "-c", "1"]
    wideband = _sox(pcm.tobytes(), [*raw, "-r", "8000", "-"], [*raw, "-r", "16000"])
    # batch CMN over the whole utterance: the result does not depend on earlier utterances
    decoder.start_utt()
    decoder.process_raw(wideband, full_utt=True)
    decoder.end_utt()
    hypothesis = decoder.hyp()
    return " ".join(hypothesis.hypstr.lower().split()) if hypothesis is not None else ""


def _serve() -> None:
    """The worker: transcribe each utterance read from stdin until it is closed."""
    decoder = _decoder()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            mulaw = _read_message(source)
        except EOFError:
            return
        text = _decode(decoder, mulaw).encode("utf-8")
        sink.write(struct.pack("<I", len(text)) + text)
        sink.flush()


if __name__ == "__main__":
    _serve()
