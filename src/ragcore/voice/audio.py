"""Phone audio as the telephony provider carries it: G.711 µ-law, 8,000 samples a second,
one byte a sample, in 20 ms frames of 160 bytes. Speech is sent to and received from the
speech provider in the same format, so nothing is transcoded on the way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

SAMPLE_RATE = 8000
FRAME_MS = 20
FRAME_SECONDS = FRAME_MS / 1000
FRAME_BYTES = SAMPLE_RATE * FRAME_MS // 1000  # 160
SILENT_BYTE = 0xFF  # µ-law's encoding of 0
SILENT_FRAME = bytes([SILENT_BYTE]) * FRAME_BYTES
#: the level of digital silence, and the floor of ``level_db``
FLOOR_DB = -100.0
_FULL_SCALE = 32768.0


def _decode(code: int) -> int:
    """One µ-law byte as a 16-bit linear sample (ITU-T G.711)."""
    code = ~code & 0xFF
    magnitude = (((code & 0x0F) << 3) + 0x84) << ((code >> 4) & 0x07)
    return 0x84 - magnitude if code & 0x80 else magnitude - 0x84


LINEAR = tuple(_decode(code) for code in range(256))
_SQUARES = tuple(sample * sample for sample in LINEAR)


def level_db(audio: bytes) -> float:
    """The RMS level of µ-law ``audio`` in dB below full scale (``FLOOR_DB`` for silence)."""
    if not audio:
        return FLOOR_DB
    power = sum(map(_SQUARES.__getitem__, audio)) / len(audio)
    if power <= 0:
        return FLOOR_DB
    return max(FLOOR_DB, 10 * math.log10(power / (_FULL_SCALE * _FULL_SCALE)))


def frames(audio: bytes) -> Iterator[bytes]:
    """``audio`` in whole frames; a last partial frame is padded with silence."""
    for start in range(0, len(audio), FRAME_BYTES):
        frame = audio[start : start + FRAME_BYTES]
        yield frame + bytes([SILENT_BYTE]) * (FRAME_BYTES - len(frame))


def duration(audio: bytes) -> float:
    """Seconds of µ-law ``audio``."""
    return len(audio) / SAMPLE_RATE


def encode(samples: list[int] | tuple[int, ...]) -> bytes:
    """16-bit linear samples as µ-law bytes (ITU-T G.711), for making test tones and
    prompts; the hot path never transcodes."""
    return bytes(_encode(sample) for sample in samples)


def decode(audio: bytes) -> list[int]:
    """µ-law bytes as 16-bit linear samples (the voice-activity detector reads these)."""
    return [LINEAR[code] for code in audio]


def _encode(sample: int) -> int:
    """G.711's µ-law encoder on the 14 bits it keeps (as CPython's audioop did)."""
    value = sample >> 2
    mask = 0xFF
    if value < 0:
        value, mask = -value, 0x7F
    value = min(value, 8159) + 0x21
    segment = max(0, value.bit_length() - 6)
    if segment > 7:  # full scale
        return 0x7F ^ mask
    return ((segment << 4) | ((value >> (segment + 1)) & 0x0F)) ^ mask
