#!/usr/bin/env python3
"""Compare voice-activity detectors on phone audio: accuracy per 20 ms frame and time.

    python scripts/bench_vad.py                       # WebRTC's detector, levels 0-3
    python scripts/bench_vad.py --silero silero.onnx  # and Silero's ONNX model beside it

The audio: sentences spoken by espeak-ng, as µ-law 8 kHz (the phone's format), with
pauses between them, clean and under white noise at 20 and 10 dB SNR. A frame's truth is
whether the clean speech in it is above -45 dBFS. Silero's file comes from its wheel
(``pip download silero-vad --no-deps``: silero_vad/data/silero_vad.onnx); it takes
256-sample windows at 8 kHz with 32 samples of context, so each 20 ms frame gets the
verdict of the window that ends in it. Needs espeak-ng and sox on PATH.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from ragcore.voice.audio import FRAME_BYTES, LINEAR, encode, level_db  # noqa: E402
from voiceio.vad import SpeechDetector  # noqa: E402

SENTENCES = [
    "How long do I have to return an item?",
    "I would like to know your opening hours on Saturday.",
    "Can you send the invoice to my email address please?",
    "My order number is four five six seven.",
]
PAUSE_SECONDS = 0.8
THRESHOLD_DB = -45.0


def spoken(text: str) -> np.ndarray:
    wav = subprocess.run(
        ["espeak-ng", "--stdout", "-s", "150", text], capture_output=True, check=True
    ).stdout
    raw = subprocess.run(
        [
            "sox",
            "-t",
            "wav",
            "-",
            "-t",
            "raw",
            "-r",
            "8000",
            "-e",
            "signed",
            "-b",
            "16",
            "-c",
            "1",
            "-",
        ],
        input=wav,
        capture_output=True,
        check=True,
    ).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float64)


def corpus() -> np.ndarray:
    pause = np.zeros(int(PAUSE_SECONDS * 8000))
    parts = [pause]
    for sentence in SENTENCES:
        parts += [spoken(sentence), pause]
    return np.concatenate(parts)


def frames_of(samples: np.ndarray) -> list[bytes]:
    clipped = np.clip(samples, -32768, 32767).astype(int).tolist()
    audio = encode(clipped)
    return [audio[i : i + FRAME_BYTES] for i in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES)]


def with_noise(clean: np.ndarray, snr_db: float | None, seed: int = 7) -> np.ndarray:
    if snr_db is None:
        return clean
    speech_power = np.mean(clean[np.abs(clean) > 100] ** 2)
    noise = np.random.default_rng(seed).normal(
        0, np.sqrt(speech_power / 10 ** (snr_db / 10)), len(clean)
    )
    return clean + noise


def score(truth: list[bool], verdicts: list[bool]) -> tuple[float, float, float]:
    tp = sum(t and v for t, v in zip(truth, verdicts, strict=True))
    fp = sum(v and not t for t, v in zip(truth, verdicts, strict=True))
    fn = sum(t and not v for t, v in zip(truth, verdicts, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def webrtc(level: int, frames: list[bytes]) -> tuple[list[bool], float]:
    detector = SpeechDetector(level)
    start = time.perf_counter()
    verdicts = [detector.is_speech(f) for f in frames]
    return verdicts, (time.perf_counter() - start) / len(frames)


def silero(path: str, frames: list[bytes], threshold: float = 0.5) -> tuple[list[bool], float]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    samples = np.array([LINEAR[b] for f in frames for b in f], dtype=np.float32) / 32768.0
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros((1, 32), dtype=np.float32)
    sr = np.array(8000, dtype=np.int64)
    ends: list[tuple[int, float]] = []
    start = time.perf_counter()
    for offset in range(0, len(samples) - 255, 256):
        window = samples[offset : offset + 256][None, :]
        out, state = session.run(
            None, {"input": np.concatenate([context, window], axis=1), "state": state, "sr": sr}
        )
        context = window[:, -32:]
        ends.append((offset + 256, float(out[0][0])))
    elapsed = time.perf_counter() - start
    verdicts, index = [], 0
    for number in range(len(frames)):
        frame_end = (number + 1) * FRAME_BYTES
        while index + 1 < len(ends) and ends[index + 1][0] <= frame_end:
            index += 1
        verdicts.append(
            ends[index][1] >= threshold if ends and ends[index][0] <= frame_end + 256 else False
        )
    return verdicts, elapsed / len(frames)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--silero", help="path of Silero's silero_vad.onnx")
    args = parser.parse_args()
    clean = corpus()
    truth = [level_db(f) > THRESHOLD_DB for f in frames_of(clean)]
    print(f"{len(truth)} frames of 20 ms, {sum(truth)} with speech\n")
    print(
        f"{'detector':<22}{'condition':<12}{'precision':>10}{'recall':>8}{'F1':>7}{'µs/frame':>10}"
    )
    for snr in (None, 20.0, 10.0):
        frames = frames_of(with_noise(clean, snr))
        condition = "clean" if snr is None else f"{snr:.0f} dB SNR"
        runs = [(f"webrtcvad level {level}", *webrtc(level, frames)) for level in range(4)]
        if args.silero:
            runs.append(("silero 0.5", *silero(args.silero, frames)))
        for name, verdicts, seconds in runs:
            precision, recall, f1 = score(truth, verdicts)
            print(
                f"{name:<22}{condition:<12}{precision:>10.3f}{recall:>8.3f}{f1:>7.3f}"
                f"{seconds * 1e6:>10.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
